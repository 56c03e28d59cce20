//! The example runs to its end by itself and every answer is right.

use std::process::Command;

#[test]
fn the_middle_tier_example_runs_and_exits_zero() {
    let out = Command::new(env!("CARGO_BIN_EXE_amh-middle-tier"))
        .output()
        .expect("the example runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for line in [
        "responder form: GLOBEX = Ok(18950)",
        "async fn form: INITECH = Ok(733)",
        "responder form: NOSUCH = Err(InvalidStockSymbol(InvalidStockSymbol))",
        "every answer came back through the middle tier",
    ] {
        assert!(stdout.contains(line), "{line:?} missing in:\n{stdout}");
    }
}
