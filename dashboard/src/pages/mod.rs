//! One module per page; `*_actions` modules hold the POST handlers of a page's forms.

pub mod cluster;
pub mod dlq;
pub mod explain;
pub mod group;
pub mod group_actions;
pub mod groups;
pub mod lite;
pub mod message_view;
pub mod messages;
pub mod topic;
pub mod topic_actions;
pub mod topics;
pub mod users;

use crate::form::Fields;
use crate::html::link;

/// The fields of a request's query string.
pub(crate) fn query_fields(query: Option<String>) -> Fields {
    Fields::parse(query.as_deref().unwrap_or(""))
}

/// Rows per page of the long lists (topics, groups) unless `size` says otherwise.
const PAGE_SIZE: usize = 100;
/// The most rows one page shows.
const MAX_PAGE_SIZE: usize = 1_000;

/// Which slice of a long list a page shows: `page` (from 1) and `size` from the query.
pub(crate) struct Paging {
    page: usize,
    size: usize,
}

impl Paging {
    pub(crate) fn from(fields: &Fields) -> Self {
        let number = |name: &str, default: usize| {
            fields
                .get(name)
                .and_then(|v| v.trim().parse::<usize>().ok())
                .filter(|n| *n > 0)
                .unwrap_or(default)
        };
        Self {
            page: number("page", 1),
            size: number("size", PAGE_SIZE).min(MAX_PAGE_SIZE),
        }
    }

    /// The rows of this page out of `rows` (none past the end).
    pub(crate) fn slice<'a, T>(&self, rows: &'a [T]) -> &'a [T] {
        let start = (self.page - 1).saturating_mul(self.size).min(rows.len());
        let end = start.saturating_add(self.size).min(rows.len());
        rows.get(start..end).unwrap_or_default()
    }

    /// "Rows a-b of n" and links to the previous and next pages, keeping `params` (the
    /// filter).
    pub(crate) fn nav(&self, path: &str, params: &[(&str, &str)], total: usize) -> String {
        let first = (self.page - 1).saturating_mul(self.size);
        let shown_to = first.saturating_add(self.size).min(total);
        let mut out = if first < total {
            format!("<p class=\"paging\">{}-{} of {total}", first + 1, shown_to)
        } else {
            format!("<p class=\"paging\">none of {total} on page {}", self.page)
        };
        let size = self.size.to_string();
        let link_to = |page: usize, text: &str| {
            let page = page.to_string();
            let mut all: Vec<(&str, &str)> = params.to_vec();
            all.push(("page", &page));
            all.push(("size", &size));
            link(path, &all, text)
        };
        if self.page > 1 {
            out.push(' ');
            out.push_str(&link_to(self.page - 1, "previous"));
        }
        if shown_to < total {
            out.push(' ');
            out.push_str(&link_to(self.page + 1, "next"));
        }
        out.push_str("</p>");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paging(query: &str) -> Paging {
        Paging::from(&Fields::parse(query))
    }

    #[test]
    fn a_page_shows_its_slice_and_links_to_its_neighbours() {
        let rows: Vec<u32> = (0..250).collect();
        let first = paging("");
        assert_eq!(first.slice(&rows), &rows[..100]);
        let nav = first.nav("/topics", &[("q", "a b")], rows.len());
        assert!(
            nav.contains("1-100 of 250") && nav.contains("page=2") && !nav.contains("previous"),
            "{nav}"
        );
        assert!(nav.contains("q=a%20b"), "the filter is kept: {nav}");
        let last = paging("page=3");
        assert_eq!(last.slice(&rows), &rows[200..]);
        let nav = last.nav("/topics", &[], rows.len());
        assert!(
            nav.contains("201-250 of 250") && nav.contains("page=2") && !nav.contains("next"),
            "{nav}"
        );
    }

    #[test]
    fn bad_or_huge_page_numbers_and_sizes_stay_in_bounds() {
        let rows: Vec<u32> = (0..10).collect();
        assert!(paging("page=99").slice(&rows).is_empty());
        assert_eq!(paging("page=0&size=0").slice(&rows).len(), 10, "defaults");
        assert_eq!(paging("page=x&size=-3").slice(&rows).len(), 10, "defaults");
        let huge = paging("page=18446744073709551615&size=100000");
        assert!(huge.slice(&rows).is_empty());
        assert!(huge.nav("/topics", &[], rows.len()).contains("none of 10"));
        assert_eq!(paging("size=5000").size, MAX_PAGE_SIZE);
    }
}
