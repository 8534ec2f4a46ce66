//! `page` (from 1) and `page_size` (1..=500, default 20); out of range is a 422.

use crate::error::Problem;
use admin::FieldError;
use domain::store::Page;
use serde::Deserialize;
use utoipa::IntoParams;

/// The paging parameters of every list.
#[derive(Debug, Clone, Copy, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct PageParams {
    /// Page number, from 1.
    #[param(minimum = 1, example = 1)]
    pub(crate) page: Option<u32>,
    /// Items per page, 1 to 500 (default 20).
    #[param(minimum = 1, maximum = 500, example = 20)]
    pub(crate) page_size: Option<u32>,
}

impl PageParams {
    pub(crate) fn page(self) -> Result<Page, Problem> {
        let mut errors = Vec::new();
        let page = self.page.unwrap_or(1);
        let size = self.page_size.unwrap_or(20);
        if page < 1 {
            errors.push(FieldError::new("/page", "must be at least 1"));
        }
        if !(1..=Page::MAX_SIZE).contains(&size) {
            errors.push(FieldError::new("/page_size", "must be between 1 and 500"));
        }
        if errors.is_empty() {
            Ok(Page {
                page,
                page_size: size,
            })
        } else {
            Err(Problem::validation(errors))
        }
    }
}
