#[derive(clap::Subcommand)]
pub enum Cmd {
    /// Print the built-in default policy.
    ShowDefault,
}

pub fn run(_cmd: Cmd) -> anyhow::Result<i32> {
    anyhow::bail!("`airlock policy` is not implemented yet")
}
