//! The `gridbed` binary: gridbed's command line.

fn main() -> std::process::ExitCode {
    gridbed::command_line()
}
