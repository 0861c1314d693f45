//! Lists the API answers a page at a time (schedules, concurrency and rate keys): every page,
//! following each page's `next` as the following one's `after`.

use crate::{Client, Error, decode};

impl Client {
    /// Every item of the list at `path` (with `query`): `items` splits a page into its items
    /// and its `next`.
    pub(crate) async fn every_page<P, T>(
        &self,
        path: &str,
        query: &[(&str, &str)],
        items: impl Fn(P) -> (Vec<T>, Option<String>),
    ) -> Result<Vec<T>, Error>
    where
        P: serde::de::DeserializeOwned,
    {
        let (mut all, mut after) = (Vec::new(), None::<String>);
        loop {
            let mut req = self.http.get(format!("{}{path}", self.base)).query(query);
            if let Some(a) = &after {
                req = req.query(&[("after", a)]);
            }
            let (page, next) = items(decode::<P>(req.send().await?).await?);
            all.extend(page);
            match next {
                Some(next) => after = Some(next),
                None => return Ok(all),
            }
        }
    }
}
