//! Recursive descent over RocketMQ's selector grammar, loosest first:
//! OR < AND < equality (`=`, `<>`, `IS [NOT] NULL`) < comparison (`>`, `>=`, `<`, `<=`,
//! `[NOT] BETWEEN`, `[NOT] IN`, `[NOT] CONTAINS`, `[NOT] STARTSWITH`, `[NOT] ENDSWITH`)
//! < unary (`+`, `-`, `NOT`) < literals, properties and parentheses.

use super::lex::{Keyword, Token};
use super::{CmpOp, Expr, SqlError, StrOp, Value};

pub struct Parser {
    tokens: Vec<Token>,
    pos: usize,
}

impl Parser {
    pub fn new(tokens: Vec<Token>) -> Self {
        Self { tokens, pos: 0 }
    }

    /// The whole selector, which must be a boolean expression.
    pub fn selector(mut self) -> Result<Expr, SqlError> {
        let expr = self.or()?;
        if let Some(extra) = self.peek() {
            return Err(SqlError(format!(
                "unexpected {extra:?} after the expression"
            )));
        }
        boolean(expr)
    }

    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    fn peek_at(&self, ahead: usize) -> Option<&Token> {
        self.tokens.get(self.pos + ahead)
    }

    fn eat_keyword(&mut self, k: Keyword) -> bool {
        if self.peek() == Some(&Token::Keyword(k)) {
            self.pos += 1;
            return true;
        }
        false
    }

    fn eat_symbol(&mut self, s: &str) -> bool {
        if matches!(self.peek(), Some(Token::Symbol(t)) if *t == s) {
            self.pos += 1;
            return true;
        }
        false
    }

    fn expect_keyword(&mut self, k: Keyword) -> Result<(), SqlError> {
        if self.eat_keyword(k) {
            return Ok(());
        }
        Err(SqlError(format!("expected {k:?}, found {:?}", self.peek())))
    }

    fn expect_symbol(&mut self, s: &str) -> Result<(), SqlError> {
        if self.eat_symbol(s) {
            return Ok(());
        }
        Err(SqlError(format!("expected '{s}', found {:?}", self.peek())))
    }

    /// `NOT` followed by `k`, consumed only as a pair.
    fn eat_not_then(&mut self, k: Keyword) -> bool {
        if self.peek() == Some(&Token::Keyword(Keyword::Not))
            && self.peek_at(1) == Some(&Token::Keyword(k))
        {
            self.pos += 2;
            return true;
        }
        false
    }

    fn or(&mut self) -> Result<Expr, SqlError> {
        let mut left = self.and()?;
        while self.eat_keyword(Keyword::Or) {
            let right = self.and()?;
            left = Expr::Or(Box::new(boolean(left)?), Box::new(boolean(right)?));
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Expr, SqlError> {
        let mut left = self.equality()?;
        while self.eat_keyword(Keyword::And) {
            let right = self.equality()?;
            left = Expr::And(Box::new(boolean(left)?), Box::new(boolean(right)?));
        }
        Ok(left)
    }

    fn equality(&mut self) -> Result<Expr, SqlError> {
        let mut left = self.comparison()?;
        loop {
            if self.eat_symbol("=") {
                let right = self.comparison()?;
                left = Expr::Cmp(CmpOp::Eq, Box::new(left), Box::new(right));
            } else if self.eat_symbol("<>") {
                let right = self.comparison()?;
                left = Expr::Not(Box::new(Expr::Cmp(
                    CmpOp::Eq,
                    Box::new(left),
                    Box::new(right),
                )));
            } else if self.eat_keyword(Keyword::Is) {
                let negated = self.eat_keyword(Keyword::Not);
                self.expect_keyword(Keyword::Null)?;
                left = Expr::IsNull {
                    expr: Box::new(left),
                    negated,
                };
            } else {
                return Ok(left);
            }
        }
    }

    fn comparison(&mut self) -> Result<Expr, SqlError> {
        let mut left = self.unary()?;
        loop {
            let op = [
                (">", CmpOp::Gt),
                (">=", CmpOp::Ge),
                ("<", CmpOp::Lt),
                ("<=", CmpOp::Le),
            ]
            .into_iter()
            .find(|(s, _)| matches!(self.peek(), Some(Token::Symbol(t)) if t == s));
            if let Some((_, op)) = op {
                self.pos += 1;
                let right = self.unary()?;
                left = Expr::Cmp(op, Box::new(left), Box::new(right));
                continue;
            }
            if let Some(next) = self.negatable_comparison(left.clone())? {
                left = next;
                continue;
            }
            return Ok(left);
        }
    }

    /// `[NOT] BETWEEN`, `[NOT] IN`, `[NOT] CONTAINS | STARTSWITH | ENDSWITH` after `left`.
    fn negatable_comparison(&mut self, left: Expr) -> Result<Option<Expr>, SqlError> {
        let kinds = [
            Keyword::Between,
            Keyword::In,
            Keyword::Contains,
            Keyword::StartsWith,
            Keyword::EndsWith,
        ];
        let Some((kind, negated)) = kinds.into_iter().find_map(|k| {
            if self.eat_keyword(k) {
                Some((k, false))
            } else if self.eat_not_then(k) {
                Some((k, true))
            } else {
                None
            }
        }) else {
            return Ok(None);
        };
        let left = Box::new(left);
        let expr = match kind {
            Keyword::Between => {
                let low = Box::new(self.unary()?);
                self.expect_keyword(Keyword::And)?;
                let high = Box::new(self.unary()?);
                Expr::Between {
                    expr: left,
                    low,
                    high,
                    negated,
                }
            }
            Keyword::In => {
                self.expect_symbol("(")?;
                let mut list = vec![self.string()?];
                while self.eat_symbol(",") {
                    list.push(self.string()?);
                }
                self.expect_symbol(")")?;
                Expr::In {
                    expr: left,
                    list,
                    negated,
                }
            }
            _ => {
                let op = match kind {
                    Keyword::Contains => StrOp::Contains,
                    Keyword::StartsWith => StrOp::StartsWith,
                    _ => StrOp::EndsWith,
                };
                Expr::Str {
                    op,
                    expr: left,
                    pattern: self.string()?,
                    negated,
                }
            }
        };
        Ok(Some(expr))
    }

    fn string(&mut self) -> Result<String, SqlError> {
        match self.peek().cloned() {
            Some(Token::Str(s)) => {
                self.pos += 1;
                Ok(s)
            }
            other => Err(SqlError(format!("expected a 'string', found {other:?}"))),
        }
    }

    fn unary(&mut self) -> Result<Expr, SqlError> {
        if self.eat_symbol("+") {
            return self.unary();
        }
        if self.eat_symbol("-") {
            return Ok(Expr::Neg(Box::new(self.unary()?)));
        }
        if self.eat_keyword(Keyword::Not) {
            return Ok(Expr::Not(Box::new(boolean(self.unary()?)?)));
        }
        self.primary()
    }

    fn primary(&mut self) -> Result<Expr, SqlError> {
        let token = self
            .peek()
            .cloned()
            .ok_or_else(|| SqlError("the expression ends too early".into()))?;
        self.pos += 1;
        Ok(match token {
            Token::Str(s) => Expr::Const(Value::Str(s)),
            Token::Long(n) => Expr::Const(Value::Long(n)),
            Token::Double(d) => Expr::Const(Value::Double(d)),
            Token::Keyword(Keyword::True) => Expr::Const(Value::Bool(true)),
            Token::Keyword(Keyword::False) => Expr::Const(Value::Bool(false)),
            Token::Keyword(Keyword::Null) => Expr::Const(Value::Null),
            Token::Ident(name) => Expr::Prop(name),
            Token::Symbol("(") => {
                let inner = self.or()?;
                self.expect_symbol(")")?;
                inner
            }
            other => return Err(SqlError(format!("unexpected {other:?}"))),
        })
    }
}

/// RocketMQ's `asBooleanExpression`: logic needs boolean operands; a bare property is
/// read as a boolean.
fn boolean(expr: Expr) -> Result<Expr, SqlError> {
    match expr {
        Expr::Const(Value::Long(_) | Value::Double(_) | Value::Str(_)) | Expr::Neg(_) => {
            Err(SqlError(format!(
                "expression will not result in a boolean value: {expr:?}"
            )))
        }
        other => Ok(other),
    }
}
