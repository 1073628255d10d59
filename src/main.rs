//! The `gridbed` binary: the command line of [`gridbed::cli`].

fn main() -> std::process::ExitCode {
    gridbed::cli::main()
}
