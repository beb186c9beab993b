//! Tokens of RocketMQ's SQL92 selector language: keywords (any case), identifiers,
//! decimal and floating literals, 'quoted' strings ('' escapes a quote), operators, and
//! `--` / `/* */` comments.
//!
//! Every loop here advances through the input, so tokenizing is linear in its length (which
//! [`super::Selector::parse`] bounds before calling [`tokenize`]).

use super::SqlError;

#[derive(Debug, Clone, PartialEq)]
pub enum Token {
    Ident(String),
    Long(i64),
    Double(f64),
    Str(String),
    Keyword(Keyword),
    /// `=`, `<>`, `>`, `>=`, `<`, `<=`, `(`, `)`, `,`, `+`, `-`.
    Symbol(&'static str),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keyword {
    Not,
    And,
    Or,
    Between,
    In,
    True,
    False,
    Null,
    Is,
    Contains,
    StartsWith,
    EndsWith,
}

fn keyword(word: &str) -> Option<Keyword> {
    Some(match word.to_ascii_uppercase().as_str() {
        "NOT" => Keyword::Not,
        "AND" => Keyword::And,
        "OR" => Keyword::Or,
        "BETWEEN" => Keyword::Between,
        "IN" => Keyword::In,
        "TRUE" => Keyword::True,
        "FALSE" => Keyword::False,
        "NULL" => Keyword::Null,
        "IS" => Keyword::Is,
        "CONTAINS" => Keyword::Contains,
        "STARTSWITH" => Keyword::StartsWith,
        "ENDSWITH" => Keyword::EndsWith,
        _ => return None,
    })
}

const SYMBOLS: [&str; 11] = ["<>", ">=", "<=", "=", ">", "<", "(", ")", ",", "+", "-"];

pub fn tokenize(text: &str) -> Result<Vec<Token>, SqlError> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        if c.is_whitespace() {
            i += 1;
        } else if starts_with(&chars, i, "--") {
            while chars.get(i).is_some_and(|c| *c != '\n' && *c != '\r') {
                i += 1;
            }
        } else if starts_with(&chars, i, "/*") {
            i = block_comment_end(&chars, i)?;
        } else if c == '\'' {
            let (s, next) = string_literal(&chars, i)?;
            tokens.push(Token::Str(s));
            i = next;
        } else if c.is_ascii_digit()
            || (c == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit))
        {
            let (token, next) = number(&chars, i)?;
            tokens.push(token);
            i = next;
        } else if c.is_ascii_alphabetic() || c == '_' || c == '$' {
            let start = i;
            while chars
                .get(i)
                .is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '$')
            {
                i += 1;
            }
            let word = collect(chars.get(start..i));
            tokens.push(match keyword(&word) {
                Some(k) => Token::Keyword(k),
                None => Token::Ident(word),
            });
        } else if let Some(symbol) = SYMBOLS.iter().find(|s| starts_with(&chars, i, s)) {
            tokens.push(Token::Symbol(symbol));
            i += symbol.len();
        } else {
            return Err(SqlError(format!("unexpected character '{c}' at {i}")));
        }
    }
    Ok(tokens)
}

/// The characters of `span` (none if it is out of range) as a string.
fn collect(span: Option<&[char]>) -> String {
    span.unwrap_or_default().iter().collect()
}

/// Whether the characters at `i` spell `word`.
fn starts_with(chars: &[char], i: usize, word: &str) -> bool {
    word.chars()
        .enumerate()
        .all(|(k, w)| chars.get(i + k) == Some(&w))
}

fn block_comment_end(chars: &[char], start: usize) -> Result<usize, SqlError> {
    (start + 2..chars.len())
        .find(|i| starts_with(chars, *i, "*/"))
        .map(|i| i + 2)
        .ok_or_else(|| SqlError("unterminated /* comment".into()))
}

fn string_literal(chars: &[char], start: usize) -> Result<(String, usize), SqlError> {
    let mut s = String::new();
    let mut i = start + 1;
    while let Some(&c) = chars.get(i) {
        if c == '\'' {
            if chars.get(i + 1) == Some(&'\'') {
                s.push('\'');
                i += 2;
                continue;
            }
            return Ok((s, i + 1));
        }
        s.push(c);
        i += 1;
    }
    Err(SqlError(format!("unterminated string starting at {start}")))
}

/// `123`, `123L`, `1.5`, `1.`, `.5`, `1e10`, `1.5E-3`.
fn number(chars: &[char], start: usize) -> Result<(Token, usize), SqlError> {
    let mut i = start;
    let digits = |i: &mut usize| {
        while chars.get(*i).is_some_and(char::is_ascii_digit) {
            *i += 1;
        }
    };
    digits(&mut i);
    let mut float = false;
    if chars.get(i) == Some(&'.') {
        float = true;
        i += 1;
        digits(&mut i);
    }
    if matches!(chars.get(i), Some('e' | 'E')) {
        let mut j = i + 1;
        if matches!(chars.get(j), Some('+' | '-')) {
            j += 1;
        }
        if chars.get(j).is_some_and(char::is_ascii_digit) {
            float = true;
            i = j;
            digits(&mut i);
        }
    }
    let text = collect(chars.get(start..i));
    let bad = || SqlError(format!("bad number '{text}'"));
    if float {
        return Ok((Token::Double(text.parse().map_err(|_| bad())?), i));
    }
    if matches!(chars.get(i), Some('l' | 'L')) {
        i += 1;
    }
    if text.len() > 1 && text.starts_with('0') {
        return Err(bad());
    }
    Ok((Token::Long(text.parse().map_err(|_| bad())?), i))
}
