//! Column lists as `--inputs u, v` and `--targets y` name them.

use crate::error::{CliError, Result};

/// Splits a comma-separated column list (`u, v`) into trimmed names; `flag` names the option in
/// errors. Empty names and repeated names are errors.
pub fn parse_column_list(flag: &'static str, text: &str) -> Result<Vec<String>> {
    let names: Vec<String> = text.split(',').map(|n| n.trim().to_string()).collect();
    if names.iter().any(String::is_empty) {
        return Err(CliError::Argument {
            flag,
            message: format!("empty column name in `{text}` (expected names separated by commas)"),
        });
    }
    for (i, name) in names.iter().enumerate() {
        if names[..i].contains(name) {
            return Err(CliError::Argument {
                flag,
                message: format!("column `{name}` is listed more than once"),
            });
        }
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_lists_are_trimmed_and_checked() {
        assert_eq!(
            parse_column_list("--inputs", " u , v").ok(),
            Some(vec!["u".into(), "v".into()])
        );
        assert!(parse_column_list("--inputs", "u,,v").is_err());
        assert!(parse_column_list("--inputs", "").is_err());
        assert!(parse_column_list("--inputs", "u,u").is_err());
    }
}
