//! Old finished work made fast: copies of a finished task, for purges and lists to find.

use super::*;

/// Copies finished task `source` (its steps, edges and history) `n` times with new ids, each
/// copy completed `age` ago (a millisecond apart), in one transaction: old finished work for a
/// purge to find, made at the speed of a bulk insert. A copy's ids are md5 digests of the
/// original's and its number, salted per call, so no statement joins copies to originals.
/// Returns the copies' ids.
pub async fn copy_finished_task(
    database_url: &str,
    source: Uuid,
    n: i64,
    age: chrono::Duration,
) -> anyhow::Result<Vec<Uuid>> {
    let mut db = sqlx::PgConnection::connect(database_url).await?;
    let mut tx = sqlx::Connection::begin(&mut db).await?;
    let salt = Uuid::now_v7().to_string();
    let copy = |id: &str| format!("md5($3 || g || {id}::text)::uuid");
    let task = copy("'task'");
    let at = "clock_timestamp() - make_interval(secs => ($4::bigint + g) / 1000.0)";
    // Every column as it is, but those given.
    let columns = |table: &'static str| {
        sqlx::query_scalar::<_, String>(
            "SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) FROM pg_attribute
             WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped",
        )
        .bind(table)
    };
    let task_cols = columns("tasks").fetch_one(&mut *tx).await?;
    let step_cols = columns("steps").fetch_one(&mut *tx).await?;
    let replaced = |cols: &str, alias: &str, with: &[(&str, &str)]| -> String {
        cols.split(", ")
            .map(|c| match with.iter().find(|(name, _)| *name == c) {
                Some((_, expr)) => expr.to_string(),
                None => format!("{alias}.{c}"),
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let statements = [
        format!(
            "INSERT INTO tasks ({task_cols}) SELECT {} FROM generate_series(1, $2) AS g
             CROSS JOIN tasks t WHERE t.id = $1",
            replaced(
                &task_cols,
                "t",
                &[
                    ("id", task.as_str()),
                    ("idempotency_key", "NULL"),
                    ("created_at", at),
                    ("completed_at", at)
                ]
            )
        ),
        format!(
            "INSERT INTO steps ({step_cols}) SELECT {} FROM generate_series(1, $2) AS g
             CROSS JOIN steps s WHERE s.task_id = $1",
            replaced(
                &step_cols,
                "s",
                &[("id", copy("s.id").as_str()), ("task_id", task.as_str())]
            )
        ),
        format!(
            "INSERT INTO step_edges (task_id, parent_id, child_id)
             SELECT {task}, {}, {}
             FROM generate_series(1, $2) AS g CROSS JOIN step_edges e WHERE e.task_id = $1",
            copy("e.parent_id"),
            copy("e.child_id")
        ),
        format!(
            "INSERT INTO transitions (task_id, step_id, from_state, to_state, attempt, reason, at)
             SELECT {task}, CASE WHEN h.step_id IS NOT NULL THEN {} END, h.from_state,
                    h.to_state, h.attempt, h.reason, h.at
             FROM generate_series(1, $2) AS g CROSS JOIN transitions h WHERE h.task_id = $1",
            copy("h.step_id")
        ),
    ];
    for sql in &statements {
        sqlx::query(sql)
            .bind(source)
            .bind(n)
            .bind(&salt)
            .bind(age.num_milliseconds())
            .execute(&mut *tx)
            .await?;
    }
    let ids: Vec<Uuid> = sqlx::query_scalar(&format!(
        "SELECT {task} FROM generate_series(1, $2) AS g WHERE $1::uuid IS NOT NULL
           AND $4::bigint IS NOT NULL"
    ))
    .bind(source)
    .bind(n)
    .bind(&salt)
    .bind(age.num_milliseconds())
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    db.close().await?;
    Ok(ids)
}
