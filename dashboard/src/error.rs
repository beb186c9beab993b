//! What a page can fail with, and how a failure is shown: an HTML page with the cause,
//! escaped, and a status code that says whose fault it was.

use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use stellmq_client::ClientError;
use thiserror::Error;

use crate::html::{esc, Page};

#[derive(Debug, Error)]
pub enum ConsoleError {
    /// The request itself is wrong: a missing or malformed field.
    #[error("{0}")]
    BadInput(String),
    /// Nothing matches what was asked for.
    #[error("{0}")]
    NotFound(String),
    /// A name server or broker refused or did not answer.
    #[error("admin request failed: {0}")]
    Admin(#[from] ClientError),
}

impl ConsoleError {
    fn status(&self) -> StatusCode {
        match self {
            ConsoleError::BadInput(_) => StatusCode::BAD_REQUEST,
            ConsoleError::NotFound(_) => StatusCode::NOT_FOUND,
            ConsoleError::Admin(_) => StatusCode::BAD_GATEWAY,
        }
    }
}

impl IntoResponse for ConsoleError {
    fn into_response(self) -> Response {
        tracing::warn!(error = %self, "CONSOLE_REQUEST_FAILED");
        let mut page = Page::new("Error");
        page.raw(&format!(
            "<p class=\"error\">{}</p>",
            esc(&self.to_string())
        ));
        (self.status(), Html(page.finish())).into_response()
    }
}

/// What every page handler returns.
pub type PageResult = Result<Html<String>, ConsoleError>;
