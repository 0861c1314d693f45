//! The `csv_products` workflow: split a product CSV into cursor ranges, summarize each range,
//! aggregate. Money is summed in integer cents so every language gets the same total.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{Value, json};
use tasker_worker::{HandlerError, StepContext};

use super::batches::{cursor, ranges};

/// The folder CSV files may be read from: `TASKER_CSV_ROOT`, else the repository's
/// `tests/fixtures`. A task's context names the file, so without this bound any task could make
/// the worker read any file it can.
fn csv_root() -> PathBuf {
    std::env::var_os("TASKER_CSV_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures"))
}

fn path(ctx: &StepContext) -> Result<PathBuf, HandlerError> {
    let given = ctx
        .context
        .get("csv_path")
        .and_then(Value::as_str)
        .map(PathBuf::from)
        .ok_or_else(|| HandlerError::permanent("invalid_input", "context.csv_path is required"))?;
    let root = csv_root();
    let outside = || {
        HandlerError::permanent(
            "invalid_input",
            format!(
                "csv_path must name a file under {} (TASKER_CSV_ROOT allows another folder)",
                root.display()
            ),
        )
    };
    let real = given.canonicalize().map_err(|e| {
        HandlerError::permanent("io", format!("cannot read {}: {e}", given.display()))
    })?;
    match root.canonicalize() {
        Ok(root) if real.starts_with(&root) => Ok(real),
        _ => Err(outside()),
    }
}

fn reader(ctx: &StepContext) -> Result<csv::Reader<std::fs::File>, HandlerError> {
    let path = path(ctx)?;
    csv::Reader::from_path(&path)
        .map_err(|e| HandlerError::permanent("io", format!("cannot read {}: {e}", path.display())))
}

/// Counts the data rows and returns one `{start, end}` batch per `batch_size` rows.
pub(super) async fn split(ctx: StepContext) -> Result<Value, HandlerError> {
    let size = ctx
        .context
        .get("batch_size")
        .and_then(Value::as_u64)
        .unwrap_or(200) as usize;
    let mut rows = 0usize;
    for record in reader(&ctx)?.records() {
        record.map_err(|e| HandlerError::permanent("invalid_csv", e.to_string()))?;
        rows += 1;
    }
    let mut result = serde_json::Map::new();
    result.insert("rows".into(), rows.into());
    result.insert("batches".into(), Value::Array(ranges(rows, size)));
    Ok(Value::Object(result))
}

/// Price `"12.34"` in cents.
fn cents(price: &str) -> Option<i64> {
    let (whole, frac) = price.split_once('.').unwrap_or((price, "0"));
    let frac = format!("{frac:0<2}");
    if frac.len() != 2 {
        return None;
    }
    Some(whole.parse::<i64>().ok()? * 100 + frac.parse::<i64>().ok()?)
}

/// Rows, rows per category and inventory value (price × stock, in cents) of one range.
pub(super) async fn process_batch(ctx: StepContext) -> Result<Value, HandlerError> {
    let (start, end) = cursor(&ctx)?;
    let mut reader = reader(&ctx)?;
    let headers = reader
        .headers()
        .map_err(|e| HandlerError::permanent("invalid_csv", e.to_string()))?
        .clone();
    let col = |name: &str| {
        headers
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| HandlerError::permanent("invalid_csv", format!("no `{name}` column")))
    };
    let (category, price, stock) = (col("category")?, col("price")?, col("stock")?);
    let mut per_category: BTreeMap<String, u64> = BTreeMap::new();
    let (mut rows, mut value) = (0u64, 0i64);
    for record in reader.records().skip(start).take(end.saturating_sub(start)) {
        let record = record.map_err(|e| HandlerError::permanent("invalid_csv", e.to_string()))?;
        let bad = |what: &str| {
            HandlerError::permanent(
                "invalid_csv",
                format!("row {}: bad {what}", start + rows as usize + 1),
            )
        };
        let p = cents(&record[price]).ok_or_else(|| bad("price"))?;
        let s: i64 = record[stock].parse().map_err(|_| bad("stock"))?;
        *per_category.entry(record[category].to_owned()).or_default() += 1;
        value += p * s;
        rows += 1;
    }
    Ok(json!({ "rows": rows, "per_category": per_category, "inventory_value_cents": value }))
}

/// Sums the batch summaries (the `split` result among the parents is skipped).
pub(super) async fn aggregate(ctx: StepContext) -> Result<Value, HandlerError> {
    let mut per_category: BTreeMap<String, u64> = BTreeMap::new();
    let (mut rows, mut value, mut batches, mut failed) = (0u64, 0i64, 0u64, 0u64);
    let mut parents = ctx.parent_results.each();
    while let Some((_, result)) = parents.next().await? {
        if result.get("failed").and_then(Value::as_bool) == Some(true) {
            failed += 1;
            continue;
        }
        let Some(r) = result
            .get("rows")
            .filter(|_| result.get("batches").is_none())
        else {
            continue;
        };
        batches += 1;
        rows += r.as_u64().unwrap_or(0);
        value += result["inventory_value_cents"].as_i64().unwrap_or(0);
        for (k, v) in result["per_category"].as_object().into_iter().flatten() {
            *per_category.entry(k.clone()).or_default() += v.as_u64().unwrap_or(0);
        }
    }
    Ok(json!({
        "rows_processed": rows,
        "per_category": per_category,
        "total_inventory_value_cents": value,
        "total_inventory_value": format!("{}.{:02}", value / 100, value % 100),
        "batches": batches,
        "failed_batches": failed,
    }))
}

#[cfg(test)]
mod tests {
    use super::cents;

    #[test]
    fn prices_parse_to_cents() {
        assert_eq!(cents("12.34"), Some(1234));
        assert_eq!(cents("7"), Some(700));
        assert_eq!(cents("0.5"), Some(50));
        assert_eq!(cents("1.234"), None);
        assert_eq!(cents("x.10"), None);
    }
}
