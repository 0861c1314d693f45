//! The local services' state folder keeps task data private: logs, pid files and RabbitMQ's
//! message store are readable by their owner only.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

#[test]
fn logs_and_the_message_store_are_not_readable_by_others() -> anyhow::Result<()> {
    let Some(home) = std::env::var_os("TASKER_HOME").map(PathBuf::from) else {
        // Services from DATABASE_URL / AMQP_URL, not ours: nothing of theirs to check.
        eprintln!("TASKER_HOME is not set (external services): skipped");
        return Ok(());
    };
    for dir in [
        "logs",
        "run",
        "rabbitmq",
        "rabbitmq/mnesia",
        "logs/rabbitmq",
    ] {
        let path = home.join(dir);
        let mode = std::fs::metadata(&path)?.permissions().mode() & 0o777;
        assert_eq!(
            mode & 0o077,
            0,
            "{} is mode {mode:o}: group and others must have no access",
            path.display()
        );
    }
    Ok(())
}
