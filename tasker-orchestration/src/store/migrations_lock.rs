//! Released migrations are never edited or removed, and every migration is in the lock file.

use std::collections::BTreeMap;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `migrations.lock`: file name → checksum of every released migration.
fn released() -> BTreeMap<String, String> {
    include_str!("../../migrations.lock")
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (file, sum) = l.split_once(' ').expect("`<file> <sha384>` per line");
            (file.to_owned(), sum.trim().to_owned())
        })
        .collect()
}

/// The migrations as built into the binary: file name → checksum.
fn current() -> BTreeMap<String, String> {
    super::migrator()
        .iter()
        .map(|m| {
            (
                format!("{:04}_{}.sql", m.version, m.description.replace(' ', "_")),
                hex(&m.checksum),
            )
        })
        .collect()
}

#[test]
fn released_migrations_are_never_edited_or_removed() {
    let current = current();
    for (file, sum) in released() {
        match current.get(&file) {
            None => panic!("released migration {file} was removed or renamed"),
            Some(now) => assert_eq!(
                now, &sum,
                "released migration {file} was edited; put the change in a new migration"
            ),
        }
    }
}

#[test]
fn every_migration_is_recorded_in_the_lock() {
    let released = released();
    for (file, sum) in current() {
        assert!(
            released.contains_key(&file),
            "{file} is not in tasker-orchestration/migrations.lock; append `{file} {sum}`"
        );
    }
}
