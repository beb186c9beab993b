//! RocketMQ's SQL92 message selectors (`MessageSelector.bySql`), evaluated by the broker
//! against a message's properties (user properties and system ones such as `TAGS`).
//!
//! Semantics follow RocketMQ's (ActiveMQ-derived) selector: a missing property is NULL and
//! makes comparisons unknown; AND/OR/NOT use three-valued logic; a message matches only
//! when the selector is TRUE. Property values are strings, compared with numbers or
//! booleans by converting the string (a string that does not convert compares false).
//!
//! Limits: any client can subscribe with a selector, so the parser refuses, with a
//! [`SqlError`], selectors longer than [`MAX_SELECTOR_LEN`] bytes and selectors nesting deeper
//! than [`MAX_DEPTH`] levels (parentheses, unary operators and chained comparisons each add a
//! level; `AND`/`OR` chains of any length are one level). Parsing, evaluating and dropping a
//! selector therefore use a bounded amount of stack. RocketMQ's selectors are short; these
//! bounds are far above any real one.

mod lex;
mod parse;

use std::cmp::Ordering;

/// A selector that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid SQL92 selector: {0}")]
pub struct SqlError(pub String);

/// Longest selector accepted, in bytes of its text.
pub const MAX_SELECTOR_LEN: usize = 8 * 1024;

/// Deepest nesting accepted, and the greatest height of a parsed selector's tree.
pub const MAX_DEPTH: usize = 64;

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Long(i64),
    Double(f64),
    Str(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Gt,
    Ge,
    Lt,
    Le,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StrOp {
    Contains,
    StartsWith,
    EndsWith,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Const(Value),
    Prop(String),
    /// Two or more operands, all boolean.
    And(Vec<Expr>),
    /// Two or more operands, all boolean.
    Or(Vec<Expr>),
    Not(Box<Expr>),
    Neg(Box<Expr>),
    Cmp(CmpOp, Box<Expr>, Box<Expr>),
    Between {
        expr: Box<Expr>,
        low: Box<Expr>,
        high: Box<Expr>,
        negated: bool,
    },
    In {
        expr: Box<Expr>,
        list: Vec<String>,
        negated: bool,
    },
    IsNull {
        expr: Box<Expr>,
        negated: bool,
    },
    Str {
        op: StrOp,
        expr: Box<Expr>,
        pattern: String,
        negated: bool,
    },
}

/// A parsed selector.
#[derive(Debug, Clone, PartialEq)]
pub struct Selector(Expr);

impl Selector {
    pub fn parse(text: &str) -> Result<Self, SqlError> {
        if text.len() > MAX_SELECTOR_LEN {
            return Err(SqlError(format!(
                "the expression is {} bytes long; at most {MAX_SELECTOR_LEN} are accepted",
                text.len()
            )));
        }
        let tokens = lex::tokenize(text)?;
        if tokens.is_empty() {
            return Err(SqlError("the expression is empty".into()));
        }
        parse::Parser::new(tokens).selector().map(Selector)
    }

    /// Whether a message with these properties is selected.
    pub fn matches<'a>(&self, property: impl Fn(&str) -> Option<&'a str>) -> bool {
        truth(eval(&self.0, &property)) == Some(true)
    }
}

fn eval<'a>(expr: &Expr, prop: &impl Fn(&str) -> Option<&'a str>) -> Value {
    match expr {
        Expr::Const(v) => v.clone(),
        Expr::Prop(name) => prop(name).map_or(Value::Null, |s| Value::Str(s.to_owned())),
        Expr::And(terms) => all(terms.iter().map(|t| truth(eval(t, prop)))),
        Expr::Or(terms) => any(terms.iter().map(|t| truth(eval(t, prop)))),
        Expr::Not(e) => truth(eval(e, prop)).map_or(Value::Null, |b| Value::Bool(!b)),
        Expr::Neg(e) => match number(&eval(e, prop)) {
            Some(Num::Long(n)) => Value::Long(n.wrapping_neg()),
            Some(Num::Double(d)) => Value::Double(-d),
            None => Value::Null,
        },
        Expr::Cmp(op, l, r) => compare(*op, &eval(l, prop), &eval(r, prop)),
        Expr::Between {
            expr,
            low,
            high,
            negated,
        } => {
            let v = eval(expr, prop);
            let inside = all([
                truth(compare(CmpOp::Ge, &v, &eval(low, prop))),
                truth(compare(CmpOp::Le, &v, &eval(high, prop))),
            ]
            .into_iter());
            negate_if(*negated, inside)
        }
        Expr::In {
            expr,
            list,
            negated,
        } => match eval(expr, prop) {
            Value::Str(s) => Value::Bool(list.contains(&s) != *negated),
            _ => Value::Null,
        },
        Expr::IsNull { expr, negated } => {
            Value::Bool((eval(expr, prop) == Value::Null) != *negated)
        }
        Expr::Str {
            op,
            expr,
            pattern,
            negated,
        } => match eval(expr, prop) {
            Value::Str(s) => {
                let hit = match op {
                    StrOp::Contains => s.contains(pattern.as_str()),
                    StrOp::StartsWith => s.starts_with(pattern.as_str()),
                    StrOp::EndsWith => s.ends_with(pattern.as_str()),
                };
                Value::Bool(hit != *negated)
            }
            _ => Value::Null,
        },
    }
}

/// Three-valued AND: false if any is false, else unknown if any is unknown, else true.
fn all(truths: impl Iterator<Item = Option<bool>>) -> Value {
    let mut unknown = false;
    for t in truths {
        match t {
            Some(false) => return Value::Bool(false),
            Some(true) => {}
            None => unknown = true,
        }
    }
    if unknown {
        Value::Null
    } else {
        Value::Bool(true)
    }
}

/// Three-valued OR: true if any is true, else unknown if any is unknown, else false.
fn any(truths: impl Iterator<Item = Option<bool>>) -> Value {
    let mut unknown = false;
    for t in truths {
        match t {
            Some(true) => return Value::Bool(true),
            Some(false) => {}
            None => unknown = true,
        }
    }
    if unknown {
        Value::Null
    } else {
        Value::Bool(false)
    }
}

fn negate_if(negated: bool, v: Value) -> Value {
    match v {
        Value::Bool(b) => Value::Bool(b != negated),
        other => other,
    }
}

/// A value as a truth value: booleans, and strings reading `true`/`false` (a property used
/// as a condition); anything else is unknown.
fn truth(v: Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(b),
        Value::Str(s) => boolean_text(&s),
        _ => None,
    }
}

fn boolean_text(s: &str) -> Option<bool> {
    if s.eq_ignore_ascii_case("true") {
        Some(true)
    } else if s.eq_ignore_ascii_case("false") {
        Some(false)
    } else {
        None
    }
}

#[derive(Clone, Copy)]
enum Num {
    Long(i64),
    Double(f64),
}

fn number(v: &Value) -> Option<Num> {
    match v {
        Value::Long(n) => Some(Num::Long(*n)),
        Value::Double(d) => Some(Num::Double(*d)),
        Value::Str(s) => {
            let s = s.trim();
            s.parse::<i64>()
                .map(Num::Long)
                .ok()
                .or_else(|| s.parse::<f64>().ok().map(Num::Double))
        }
        _ => None,
    }
}

fn compare(op: CmpOp, l: &Value, r: &Value) -> Value {
    if *l == Value::Null || *r == Value::Null {
        return Value::Null;
    }
    let ordering = match (l, r) {
        (Value::Str(a), Value::Str(b)) => Some(a.cmp(b)),
        (Value::Bool(a), Value::Bool(b)) => Some(a.cmp(b)),
        (Value::Bool(a), Value::Str(s)) | (Value::Str(s), Value::Bool(a)) => {
            // Only equality is meaningful between booleans.
            return match (op, boolean_text(s)) {
                (CmpOp::Eq, Some(b)) => Value::Bool(*a == b),
                _ => Value::Bool(false),
            };
        }
        _ => match (number(l), number(r)) {
            (Some(Num::Long(a)), Some(Num::Long(b))) => Some(a.cmp(&b)),
            (Some(a), Some(b)) => as_f64(a).partial_cmp(&as_f64(b)),
            _ => None,
        },
    };
    let Some(ordering) = ordering else {
        return Value::Bool(false);
    };
    Value::Bool(match op {
        CmpOp::Eq => ordering == Ordering::Equal,
        CmpOp::Gt => ordering == Ordering::Greater,
        CmpOp::Ge => ordering != Ordering::Less,
        CmpOp::Lt => ordering == Ordering::Less,
        CmpOp::Le => ordering != Ordering::Greater,
    })
}

fn as_f64(n: Num) -> f64 {
    match n {
        Num::Long(n) => n as f64,
        Num::Double(d) => d,
    }
}

#[cfg(test)]
mod tests;
