//! Reading a Prometheus text page the way a scraper does.

/// The value of the sample `series` (`name{labels}`) in a Prometheus text `page`, if there.
pub fn sample(page: &str, series: &str) -> Option<f64> {
    page.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}
