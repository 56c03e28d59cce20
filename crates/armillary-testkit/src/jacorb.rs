//! JacORB 3.9, a Java ORB, for the tests that check a third ORB follows
//! Armillary (the load-balancing locator's forwards): Maven fetches it
//! from Maven Central with the POM in `tests/interop/java` and prints its
//! class path, and `javac` compiles the peers of that directory next to
//! Cargo's output (`$CARGO_TARGET_DIR/interop-java`), once per test
//! process.
//!
//! It needs `java`, `javac` and `mvn` (Java 11 or later: JacORB's
//! `javax.rmi.CORBA`, gone from the JDK, comes from
//! `glassfish-corba-omgapi`, see `NoStubDelegate.java`). Without them, or
//! with `ARMILLARY_SKIP_JACORB=1`, [`jacorb`] says so and the tests skip.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use crate::workspace;

/// JacORB's class path and the compiled peers.
#[derive(Debug)]
pub struct Jacorb {
    classpath: String,
}

impl Jacorb {
    /// The peer `class` of `tests/interop/java` (its `main`), ready for
    /// its arguments.
    pub fn command(&self, class: &str) -> Command {
        let mut command = Command::new("java");
        command
            .arg("-Djavax.rmi.CORBA.StubClass=NoStubDelegate")
            .arg("-cp")
            .arg(&self.classpath)
            .arg(class);
        command
    }
}

/// Where the Java peers are compiled: next to Cargo's own output.
fn out_dir() -> PathBuf {
    std::env::var("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| workspace().join("target"))
        .join("interop-java")
}

/// JacORB and its peers, fetched and compiled on first use; `None` (said
/// on standard error) when `ARMILLARY_SKIP_JACORB=1` or Java or Maven is
/// missing. Panics when they are there and the fetch or the build fails.
pub fn jacorb() -> Option<&'static Jacorb> {
    static BUILT: OnceLock<Option<Jacorb>> = OnceLock::new();
    BUILT.get_or_init(build).as_ref()
}

fn build() -> Option<Jacorb> {
    if std::env::var("ARMILLARY_SKIP_JACORB").as_deref() == Ok("1") {
        eprintln!("skipped: ARMILLARY_SKIP_JACORB=1");
        return None;
    }
    let missing: Vec<&str> = ["java", "javac", "mvn"]
        .into_iter()
        .filter(|tool| Command::new(tool).arg("-version").output().is_err())
        .collect();
    if !missing.is_empty() {
        eprintln!(
            "skipped: {} missing (apt-get install -y default-jdk-headless maven)",
            missing.join(", ")
        );
        return None;
    }
    let sources = workspace().join("tests/interop/java");
    let out = out_dir();
    let classes = out.join("classes");
    std::fs::create_dir_all(&classes).expect("a directory for the Java peers");
    let cp_file = out.join("classpath.txt");
    let status = Command::new("mvn")
        .args(["-q", "-f"])
        .arg(sources.join("pom.xml"))
        .arg("dependency:build-classpath")
        .arg(format!("-Dmdep.outputFile={}", cp_file.display()))
        .status()
        .expect("mvn runs");
    assert!(status.success(), "Maven could not fetch JacORB");
    let jars = std::fs::read_to_string(&cp_file).expect("Maven wrote JacORB's class path");
    let mut javac = Command::new("javac");
    javac.arg("-d").arg(&classes).arg("-cp").arg(jars.trim());
    for entry in std::fs::read_dir(&sources).expect("tests/interop/java") {
        let path = entry.expect("a directory entry").path();
        if path.extension().is_some_and(|e| e == "java") {
            javac.arg(path);
        }
    }
    let status = javac.status().expect("javac runs");
    assert!(status.success(), "compiling the JacORB peers failed");
    let separator = if cfg!(windows) { ";" } else { ":" };
    Some(Jacorb {
        classpath: format!("{}{separator}{}", jars.trim(), classes.display()),
    })
}
