//! Recursive descent over RocketMQ's selector grammar, loosest first:
//! OR < AND < equality (`=`, `<>`, `IS [NOT] NULL`) < comparison (`>`, `>=`, `<`, `<=`,
//! `[NOT] BETWEEN`, `[NOT] IN`, `[NOT] CONTAINS`, `[NOT] STARTSWITH`, `[NOT] ENDSWITH`)
//! < unary (`+`, `-`, `NOT`) < literals, properties and parentheses.
//!
//! Two guards keep hostile input from exhausting the stack (see [`MAX_DEPTH`]): every
//! recursion (into parentheses or a unary operator) counts one level of nesting, and every
//! node built knows the height of its tree, so neither parsing nor the evaluation and drop of
//! the result can go deeper than `MAX_DEPTH` levels. A node that would be too high is never
//! built.

use super::lex::{Keyword, Token};
use super::{CmpOp, Expr, SqlError, StrOp, Value, MAX_DEPTH};

/// A parsed subexpression and the height of its tree (a leaf is 1).
struct Node {
    expr: Expr,
    height: usize,
}

impl Node {
    fn leaf(expr: Expr) -> Self {
        Self { expr, height: 1 }
    }
}

fn too_deep() -> SqlError {
    SqlError(format!(
        "the expression nests deeper than {MAX_DEPTH} levels"
    ))
}

/// A node one level above children whose highest has height `child_height`.
fn wrap(expr: Expr, child_height: usize) -> Result<Node, SqlError> {
    let height = child_height + 1;
    if height > MAX_DEPTH {
        return Err(too_deep());
    }
    Ok(Node { expr, height })
}

pub struct Parser {
    tokens: Vec<Token>,
    pos: usize,
    /// Parentheses and unary operators currently open.
    nesting: usize,
}

impl Parser {
    pub fn new(tokens: Vec<Token>) -> Self {
        Self {
            tokens,
            pos: 0,
            nesting: 0,
        }
    }

    /// The whole selector, which must be a boolean expression.
    pub fn selector(mut self) -> Result<Expr, SqlError> {
        let node = self.or()?;
        if let Some(extra) = self.peek() {
            return Err(SqlError(format!(
                "unexpected {extra:?} after the expression"
            )));
        }
        boolean(node.expr)
    }

    /// Runs `parse` one nesting level deeper, refusing to go past [`MAX_DEPTH`].
    fn descend(
        &mut self,
        parse: fn(&mut Self) -> Result<Node, SqlError>,
    ) -> Result<Node, SqlError> {
        if self.nesting >= MAX_DEPTH {
            return Err(too_deep());
        }
        self.nesting += 1;
        let node = parse(self);
        self.nesting -= 1;
        node
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

    fn or(&mut self) -> Result<Node, SqlError> {
        self.logic(Keyword::Or, Self::and, Expr::Or)
    }

    fn and(&mut self) -> Result<Node, SqlError> {
        self.logic(Keyword::And, Self::equality, Expr::And)
    }

    /// `operand (op operand)*` as one n-ary node, so long chains add one level, not many.
    fn logic(
        &mut self,
        op: Keyword,
        operand: fn(&mut Self) -> Result<Node, SqlError>,
        build: fn(Vec<Expr>) -> Expr,
    ) -> Result<Node, SqlError> {
        let first = operand(self)?;
        if self.peek() != Some(&Token::Keyword(op)) {
            return Ok(first);
        }
        let mut height = first.height;
        let mut terms = vec![boolean(first.expr)?];
        while self.eat_keyword(op) {
            let next = operand(self)?;
            height = height.max(next.height);
            terms.push(boolean(next.expr)?);
        }
        wrap(build(terms), height)
    }

    fn equality(&mut self) -> Result<Node, SqlError> {
        let mut left = self.comparison()?;
        loop {
            left = if self.eat_symbol("=") {
                let right = self.comparison()?;
                cmp(CmpOp::Eq, left, right)?
            } else if self.eat_symbol("<>") {
                let right = self.comparison()?;
                let eq = cmp(CmpOp::Eq, left, right)?;
                wrap(Expr::Not(Box::new(eq.expr)), eq.height)?
            } else if self.eat_keyword(Keyword::Is) {
                let negated = self.eat_keyword(Keyword::Not);
                self.expect_keyword(Keyword::Null)?;
                let height = left.height;
                let expr = Expr::IsNull {
                    expr: Box::new(left.expr),
                    negated,
                };
                wrap(expr, height)?
            } else {
                return Ok(left);
            };
        }
    }

    fn comparison(&mut self) -> Result<Node, SqlError> {
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
            left = if let Some((_, op)) = op {
                self.pos += 1;
                let right = self.unary()?;
                cmp(op, left, right)?
            } else if let Some((kind, negated)) = self.negatable_keyword() {
                self.negatable_comparison(left, kind, negated)?
            } else {
                return Ok(left);
            };
        }
    }

    /// Consumes `[NOT] BETWEEN | IN | CONTAINS | STARTSWITH | ENDSWITH` if next.
    fn negatable_keyword(&mut self) -> Option<(Keyword, bool)> {
        [
            Keyword::Between,
            Keyword::In,
            Keyword::Contains,
            Keyword::StartsWith,
            Keyword::EndsWith,
        ]
        .into_iter()
        .find_map(|k| {
            if self.eat_keyword(k) {
                Some((k, false))
            } else if self.eat_not_then(k) {
                Some((k, true))
            } else {
                None
            }
        })
    }

    /// The rest of a `[NOT] BETWEEN`, `[NOT] IN` or string comparison after `left`.
    fn negatable_comparison(
        &mut self,
        left: Node,
        kind: Keyword,
        negated: bool,
    ) -> Result<Node, SqlError> {
        let mut height = left.height;
        let left = Box::new(left.expr);
        let expr = match kind {
            Keyword::Between => {
                let low = self.unary()?;
                self.expect_keyword(Keyword::And)?;
                let high = self.unary()?;
                height = height.max(low.height).max(high.height);
                Expr::Between {
                    expr: left,
                    low: Box::new(low.expr),
                    high: Box::new(high.expr),
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
        wrap(expr, height)
    }

    fn string(&mut self) -> Result<String, SqlError> {
        match self.peek() {
            Some(Token::Str(s)) => {
                let s = s.clone();
                self.pos += 1;
                Ok(s)
            }
            other => Err(SqlError(format!("expected a 'string', found {other:?}"))),
        }
    }

    fn unary(&mut self) -> Result<Node, SqlError> {
        if self.eat_symbol("+") {
            return self.descend(Self::unary);
        }
        if self.eat_symbol("-") {
            let inner = self.descend(Self::unary)?;
            return wrap(Expr::Neg(Box::new(inner.expr)), inner.height);
        }
        if self.eat_keyword(Keyword::Not) {
            let inner = self.descend(Self::unary)?;
            return wrap(Expr::Not(Box::new(boolean(inner.expr)?)), inner.height);
        }
        self.primary()
    }

    fn primary(&mut self) -> Result<Node, SqlError> {
        let token = self
            .peek()
            .cloned()
            .ok_or_else(|| SqlError("the expression ends too early".into()))?;
        self.pos += 1;
        Ok(Node::leaf(match token {
            Token::Str(s) => Expr::Const(Value::Str(s)),
            Token::Long(n) => Expr::Const(Value::Long(n)),
            Token::Double(d) => Expr::Const(Value::Double(d)),
            Token::Keyword(Keyword::True) => Expr::Const(Value::Bool(true)),
            Token::Keyword(Keyword::False) => Expr::Const(Value::Bool(false)),
            Token::Keyword(Keyword::Null) => Expr::Const(Value::Null),
            Token::Ident(name) => Expr::Prop(name),
            Token::Symbol("(") => {
                let inner = self.descend(Self::or)?;
                self.expect_symbol(")")?;
                return Ok(inner);
            }
            other => return Err(SqlError(format!("unexpected {other:?}"))),
        }))
    }
}

/// A comparison node over two operands.
fn cmp(op: CmpOp, left: Node, right: Node) -> Result<Node, SqlError> {
    let height = left.height.max(right.height);
    wrap(
        Expr::Cmp(op, Box::new(left.expr), Box::new(right.expr)),
        height,
    )
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
