//! Shell analysis: bash text to the simple commands it would run.

/// The argvs of the simple commands in an example string (used to check rule
/// examples at load time).
pub fn example_argvs(text: &str) -> Result<Vec<Vec<String>>, String> {
    let argv: Vec<String> = text.split_whitespace().map(String::from).collect();
    if argv.is_empty() {
        return Err("empty example".into());
    }
    Ok(vec![argv])
}
