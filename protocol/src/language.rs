//! `LanguageCode` (protocol.md 1.7): JSON headers carry the name, binary headers the byte.

/// The sender's language. Unknown names and bytes are kept, never rejected.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub enum LanguageCode {
    #[default]
    Java,
    Cpp,
    Dotnet,
    Python,
    Delphi,
    Erlang,
    Ruby,
    Other,
    Http,
    Go,
    Php,
    Oms,
    Rust,
    NodeJs,
    /// A name (JSON) or byte (binary) this table does not know.
    Unknown(String),
}

const TABLE: &[(LanguageCode, &str, u8)] = &[
    (LanguageCode::Java, "JAVA", 0),
    (LanguageCode::Cpp, "CPP", 1),
    (LanguageCode::Dotnet, "DOTNET", 2),
    (LanguageCode::Python, "PYTHON", 3),
    (LanguageCode::Delphi, "DELPHI", 4),
    (LanguageCode::Erlang, "ERLANG", 5),
    (LanguageCode::Ruby, "RUBY", 6),
    (LanguageCode::Other, "OTHER", 7),
    (LanguageCode::Http, "HTTP", 8),
    (LanguageCode::Go, "GO", 9),
    (LanguageCode::Php, "PHP", 10),
    (LanguageCode::Oms, "OMS", 11),
    (LanguageCode::Rust, "RUST", 12),
    (LanguageCode::NodeJs, "NODE_JS", 13),
];

impl LanguageCode {
    /// Parses the JSON header's name; unknown names are kept as [`LanguageCode::Unknown`].
    pub fn from_name(name: &str) -> Self {
        TABLE
            .iter()
            .find(|(_, n, _)| *n == name)
            .map(|(code, _, _)| code.clone())
            .unwrap_or_else(|| LanguageCode::Unknown(name.to_owned()))
    }

    /// Parses the binary header's byte.
    pub fn from_byte(byte: u8) -> Self {
        TABLE
            .iter()
            .find(|(_, _, b)| *b == byte)
            .map(|(code, _, _)| code.clone())
            .unwrap_or_else(|| LanguageCode::Unknown(byte.to_string()))
    }

    /// The name written in JSON headers.
    pub fn name(&self) -> &str {
        match self {
            LanguageCode::Unknown(name) => name,
            known => TABLE
                .iter()
                .find(|(code, _, _)| code == known)
                .map_or("OTHER", |(_, n, _)| n),
        }
    }

    /// The byte written in binary headers (`OTHER` for unknown languages).
    pub fn byte(&self) -> u8 {
        TABLE
            .iter()
            .find(|(code, _, _)| code == self)
            .map_or(7, |(_, _, b)| *b)
    }
}

impl std::fmt::Display for LanguageCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_bytes() {
        assert_eq!(LanguageCode::from_name("CPP"), LanguageCode::Cpp);
        assert_eq!(LanguageCode::from_byte(9), LanguageCode::Go);
        assert_eq!(LanguageCode::NodeJs.name(), "NODE_JS");
        assert_eq!(LanguageCode::Rust.byte(), 12);
        let odd = LanguageCode::from_name("COBOL");
        assert_eq!(odd, LanguageCode::Unknown("COBOL".into()));
        assert_eq!(odd.name(), "COBOL");
        assert_eq!(odd.byte(), 7);
    }
}
