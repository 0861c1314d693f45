//! Batch sizes: the histograms of each hop's batches, read from the processes' Prometheus
//! endpoints before and after a level.

use super::*;

/// Cumulative `_batch_size` histograms by (source, metric): bucket upper bounds → counts, sum.
#[derive(Default, Clone)]
pub(crate) struct Histograms(pub(crate) BTreeMap<(String, String), Histogram>);

#[derive(Default, Clone, Debug)]
pub(crate) struct Histogram {
    pub(crate) buckets: Vec<(f64, f64)>,
    pub(crate) sum: f64,
    pub(crate) count: f64,
}

impl Histograms {
    pub(crate) fn parse(&mut self, source: &str, text: &str) {
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let Some((key, value)) = line.rsplit_once(' ') else {
                continue;
            };
            let Ok(value) = value.parse::<f64>() else {
                continue;
            };
            let (name, labels) = key.split_once('{').unwrap_or((key, ""));
            let (base, part) = if let Some(b) = name.strip_suffix("_bucket") {
                (b, "bucket")
            } else if let Some(b) = name.strip_suffix("_sum") {
                (b, "sum")
            } else if let Some(b) = name.strip_suffix("_count") {
                (b, "count")
            } else {
                continue;
            };
            if !base.ends_with("_batch_size") {
                continue;
            }
            let h = self
                .0
                .entry((source.to_owned(), base.to_owned()))
                .or_default();
            match part {
                "bucket" => {
                    let le = labels
                        .split("le=\"")
                        .nth(1)
                        .and_then(|s| s.split('"').next())
                        .unwrap_or("+Inf");
                    let le = if le == "+Inf" {
                        f64::INFINITY
                    } else {
                        le.parse().unwrap_or(f64::INFINITY)
                    };
                    h.buckets.push((le, value));
                }
                "sum" => h.sum = value,
                _ => h.count = value,
            }
        }
    }

    /// What was observed between `before` and `self`: per histogram, count, mean and the
    /// bucket bounds under which 50% and 95% of the observations fall.
    pub(crate) fn since(&self, before: &Histograms) -> Value {
        let mut out = serde_json::Map::new();
        for ((source, name), h) in &self.0 {
            let b = before.0.get(&(source.clone(), name.clone()));
            let count = h.count - b.map_or(0.0, |b| b.count);
            if count <= 0.0 {
                continue;
            }
            let sum = h.sum - b.map_or(0.0, |b| b.sum);
            let bucket = |q: f64| -> Value {
                for (le, c) in &h.buckets {
                    let prev = b
                        .and_then(|b| b.buckets.iter().find(|(l, _)| l == le))
                        .map_or(0.0, |(_, c)| *c);
                    if c - prev >= q * count {
                        return if le.is_finite() {
                            json!(le)
                        } else {
                            json!("+Inf")
                        };
                    }
                }
                Value::Null
            };
            out.insert(
                format!("{source}: {name}"),
                json!({"count": count, "mean": sum / count, "p50_le": bucket(0.5), "p95_le": bucket(0.95)}),
            );
        }
        Value::Object(out)
    }
}
