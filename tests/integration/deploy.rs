//! The container recipe and the compose deployment agree with the code: no
//! Docker engine runs on the CI machine, so these are checked as files, and
//! what they ask of `gridbed site` is run on loopback.

use std::path::Path;
use std::process::Command;

use crate::common;

fn repo(p: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(p)
}

#[test]
fn the_compose_file_runs_every_site_of_its_testbed_as_a_daemon_the_others_can_reach() {
    let compose: serde_json::Value =
        yaml_serde::from_str(&std::fs::read_to_string(repo("deploy/compose.yaml")).unwrap())
            .unwrap();
    let services = compose["services"].as_object().unwrap();

    // The testbed, as the manager's container sees it: the catalogue one
    // folder up, the token beside it.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("deploy")).unwrap();
    std::fs::copy(repo("sites.toml"), dir.path().join("sites.toml")).unwrap();
    let tb = dir.path().join("deploy/compose-testbed.toml");
    std::fs::copy(repo("deploy/compose-testbed.toml"), &tb).unwrap();
    std::fs::write(dir.path().join("deploy/gridbed.token"), "t0ken\n").unwrap();
    let s = common::load(&tb);
    assert_eq!(s.sites.len(), 5);
    for site in &s.sites {
        let d = site.daemon.as_ref().expect("every site a daemon");
        assert_eq!(d.token.as_deref(), Some("t0ken"));
        let name = &site.info.name;
        assert_eq!(d.url, format!("http://{name}:7100"));
        let svc = &services[name.as_str()];
        let cmd: Vec<&str> = svc["command"]
            .as_array()
            .unwrap_or_else(|| panic!("no service `{name}`"))
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let after = |flag: &str| cmd.iter().position(|c| *c == flag).map(|i| cmd[i + 1]);
        assert_eq!(cmd[0], "site");
        assert_eq!(after("--listen"), Some("0.0.0.0:7100"), "{name}");
        assert_eq!(after("--advertise"), Some(name.as_str()), "{name}");
        assert_eq!(
            after("--token-file"),
            Some("/opt/gridbed/deploy/gridbed.token")
        );
    }
    let manager: Vec<&str> = services["manager"]["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(&manager[..2], ["run", "deploy/compose-testbed.toml"]);
    assert_eq!(
        services["manager"]["depends_on"].as_object().unwrap().len(),
        5
    );

    // The image holds what the deployment names.
    let recipe = std::fs::read_to_string(repo("Containerfile")).unwrap();
    let sources: Vec<&str> = recipe
        .lines()
        .filter_map(|l| l.strip_prefix("COPY "))
        .filter(|l| !l.starts_with("--from"))
        .flat_map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            words[..words.len() - 1].to_vec()
        })
        .collect();
    for copied in [
        "Cargo.toml",
        "Cargo.lock",
        "src",
        "sites.toml",
        "testbeds",
        "deploy",
    ] {
        assert!(sources.contains(&copied), "{copied} in {sources:?}");
    }
    for s in &sources {
        assert!(
            repo(s).exists(),
            "the recipe copies {s}, which is not in the repository"
        );
    }
    assert!(recipe.contains("ENTRYPOINT [\"gridbed\"]"));
}

#[test]
fn listening_on_every_address_needs_a_token_and_an_advertised_host() {
    let run = |env_token: bool, extra: &[&str]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_gridbed"));
        c.args(["site", "--listen", "0.0.0.0:7100"]).args(extra);
        if env_token {
            c.env("GRIDBED_TOKEN", "t0ken");
        } else {
            c.env_remove("GRIDBED_TOKEN");
        }
        let out = c.output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, err) = run(false, &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("token"), "{err}");
    let (code, err) = run(true, &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--advertise"), "{err}");
}
