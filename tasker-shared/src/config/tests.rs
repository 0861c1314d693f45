//! Configuration: the reference file, the order of sources, validation.

use super::*;

fn reference() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../config/tasker.reference.toml")
}

#[test]
fn tokens_are_required_unless_turned_off_whatever_the_address() {
    let with = |bind: &str, auth| OrchestratorConfig {
        bind: bind.into(),
        auth,
        ..OrchestratorConfig::default()
    };
    for bind in [
        "127.0.0.1:8080",
        "[::1]:80",
        "localhost:8080",
        "0.0.0.0:8080",
    ] {
        assert!(with(bind, AuthMode::default()).tokens_required(), "{bind}");
        assert!(!with(bind, AuthMode::Off).tokens_required(), "{bind}");
    }
    assert!(OrchestratorConfig::default().binds_loopback());
    assert!(!with("0.0.0.0:8080", AuthMode::Off).binds_loopback());
}

#[test]
fn auth_auto_of_earlier_releases_means_tokens() {
    figment::Jail::expect_with(|jail| {
        jail.clear_env();
        jail.set_env("TASKER_ORCHESTRATOR__AUTH", "auto");
        let config = Config::load(None).map_err(|e| e.to_string())?;
        assert_eq!(config.orchestrator.auth, AuthMode::Tokens);
        jail.set_env("TASKER_ORCHESTRATOR__AUTH", "sometimes");
        assert!(Config::load(None).is_err());
        Ok(())
    });
}

#[test]
fn a_database_off_loopback_requires_tls_unless_the_url_says() {
    for (url, expected) in [
        (
            "postgres://u@127.0.0.1:5432/t",
            "postgres://u@127.0.0.1:5432/t",
        ),
        ("postgres://localhost/t", "postgres://localhost/t"),
        ("postgres://u:p@[::1]:5432/t", "postgres://u:p@[::1]:5432/t"),
        (
            "postgres://u@db.example:5432/t",
            "postgres://u@db.example:5432/t?sslmode=require",
        ),
        (
            "postgres://u@10.0.0.5/t?application_name=x",
            "postgres://u@10.0.0.5/t?application_name=x&sslmode=require",
        ),
        (
            "postgres://u@db.example/t?sslmode=disable",
            "postgres://u@db.example/t?sslmode=disable",
        ),
        (
            "postgres://u@db.example/t?sslmode=verify-full&sslrootcert=/ca.pem",
            "postgres://u@db.example/t?sslmode=verify-full&sslrootcert=/ca.pem",
        ),
        (
            "postgres:///t?host=/var/run/postgresql",
            "postgres:///t?host=/var/run/postgresql",
        ),
    ] {
        assert_eq!(require_tls_off_loopback(url), expected, "{url}");
    }
}

#[test]
fn reference_config_parses_and_documents_every_default() {
    figment::Jail::expect_with(|jail| {
        jail.clear_env();
        let from_file = Config::load(Some(&reference())).map_err(|e| e.to_string())?;
        assert_eq!(from_file, Config::default());
        Ok(())
    });
}

#[test]
fn environment_overrides_file_and_plain_urls_are_honoured() {
    figment::Jail::expect_with(|jail| {
        jail.clear_env();
        jail.create_file(
            "t.toml",
            "queue_prefix = \"from_file\"\n[worker]\nconcurrency = 3\n",
        )?;
        jail.set_env("DATABASE_URL", "postgres://db.example/x");
        jail.set_env("TASKER_WORKER__CONCURRENCY", "9");
        jail.set_env("TASKER_HOME", "/somewhere");
        let config = Config::load(Some(Path::new("t.toml"))).map_err(|e| e.to_string())?;
        assert_eq!(config.queue_prefix, "from_file");
        assert_eq!(config.worker.concurrency, 9);
        // A database off loopback is reached over TLS unless the URL says otherwise.
        assert_eq!(
            config.database_url,
            "postgres://db.example/x?sslmode=require"
        );
        Ok(())
    });
}

/// `Config::load` in a jail holding `cert.pem` and `key.pem`, with `env` set.
fn load_with_tls_files(env: &[(&str, &str)]) -> Result<(), String> {
    let mut loaded = Ok(());
    figment::Jail::expect_with(|jail| {
        jail.clear_env();
        jail.create_file(
            "cert.pem",
            "-----BEGIN CERTIFICATE-----\nAAEC\n-----END CERTIFICATE-----\n",
        )?;
        jail.create_file(
            "key.pem",
            "-----BEGIN PRIVATE KEY-----\nAwQF\n-----END PRIVATE KEY-----\n",
        )?;
        for (k, v) in env {
            jail.set_env(k, v);
        }
        loaded = Config::load(None).map(|_| ()).map_err(|e| e.to_string());
        Ok(())
    });
    loaded
}

#[test]
fn tls_files_are_checked_at_load_with_their_key_named() {
    let cert = ("TASKER_ORCHESTRATOR__TLS_CERT_FILE", "cert.pem");
    let key = ("TASKER_ORCHESTRATOR__TLS_KEY_FILE", "key.pem");
    assert_eq!(load_with_tls_files(&[cert, key]), Ok(()));
    assert_eq!(
        load_with_tls_files(&[("TASKER_TLS_CA_FILE", "cert.pem")]),
        Ok(())
    );

    let err = load_with_tls_files(&[cert]).unwrap_err();
    assert!(
        err.contains("`orchestrator.tls_key_file` is needed"),
        "{err}"
    );
    let err = load_with_tls_files(&[key]).unwrap_err();
    assert!(
        err.contains("`orchestrator.tls_cert_file` is needed"),
        "{err}"
    );
    let swapped = [
        ("TASKER_ORCHESTRATOR__TLS_CERT_FILE", "key.pem"),
        ("TASKER_ORCHESTRATOR__TLS_KEY_FILE", "cert.pem"),
    ];
    let err = load_with_tls_files(&swapped).unwrap_err();
    assert!(
        err.contains("orchestrator.tls_cert_file") && err.contains("holds no PEM certificate"),
        "{err}"
    );
    let err = load_with_tls_files(&[("TASKER_TLS_CA_FILE", "key.pem")]).unwrap_err();
    assert!(
        err.contains("tls_ca_file") && err.contains("no PEM certificate"),
        "{err}"
    );
    let err = load_with_tls_files(&[("TASKER_TLS_CA_FILE", "missing.pem")]).unwrap_err();
    assert!(
        err.contains("tls_ca_file") && err.contains("missing.pem"),
        "{err}"
    );
}

#[test]
fn unknown_keys_and_bad_values_are_rejected() {
    figment::Jail::expect_with(|jail| {
        jail.clear_env();
        jail.create_file("bad.toml", "queue_prefx = \"x\"\n")?;
        let err = Config::load(Some(Path::new("bad.toml"))).unwrap_err();
        assert!(err.to_string().contains("queue_prefx"), "{err}");
        jail.set_env("TASKER_WORKER__CONCURRENCY", "0");
        let err = Config::load(None).unwrap_err();
        assert!(err.to_string().contains("worker.concurrency"), "{err}");
        Ok(())
    });
}

#[test]
fn retention_under_an_hour_and_unknown_queue_types_are_refused() {
    let load = |file: &'static str| {
        let mut answer = Ok(());
        figment::Jail::expect_with(|jail| {
            jail.clear_env();
            jail.create_file("t.toml", file)?;
            answer = Config::load(Some(Path::new("t.toml")))
                .map(drop)
                .map_err(|e| e.to_string());
            Ok(())
        });
        answer
    };
    let refused = load("[retention]\ncomplete = \"30m\"\n").unwrap_err();
    assert!(
        refused.contains("retention.complete") && refused.contains("at least 1h"),
        "{refused}"
    );
    let refused = load("[retention]\nerror = \"soon\"\n").unwrap_err();
    assert!(refused.contains("retention.error"), "{refused}");
    for busy in ["0", "101"] {
        let refused = load(if busy == "0" {
            "[retention]\nbusy_percent = 0\n"
        } else {
            "[retention]\nbusy_percent = 101\n"
        })
        .unwrap_err();
        assert!(
            refused.contains("retention.busy_percent") && refused.contains("1 to 100"),
            "{busy}: {refused}"
        );
    }
    let refused = load("[broker]\nqueue_type = \"mirrored\"\n").unwrap_err();
    assert!(
        refused.contains("mirrored") && refused.contains("quorum"),
        "{refused}"
    );
    let refused = load("amqp_url = \"amqp://a,http://b\"\n").unwrap_err();
    assert!(refused.contains("amqp_url"), "{refused}");
    load("[retention]\ncomplete = \"never\"\ncancelled = \"1h\"\n[broker]\nqueue_type = \"quorum\"\n")
        .expect("valid");
}
