//! `cmp-api keys create|revoke`: API keys are random, shown once, stored as SHA-256 hashes.

use clap::Subcommand;
use domain::{ApiKeyId, ApiKeyRole};
use settings::Settings;
use sha2::{Digest, Sha256};

#[derive(Subcommand)]
pub(crate) enum KeysCommand {
    /// Create a key; the key itself is printed alone on the last line of standard output.
    Create {
        #[arg(long)]
        name: String,
        #[arg(long, value_parser = ["admin", "operator", "viewer"])]
        role: String,
    },
    /// Revoke a key by id.
    Revoke { id: i64 },
}

/// The stored form of a key.
pub(crate) fn hash_key(key: &str) -> String {
    hex(&Sha256::digest(key.as_bytes()))
}

/// `bytes` as lowercase hex.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `N` random bytes as hex: keys, session cookies, CSRF tokens, job ids.
pub(crate) fn random_hex<const N: usize>() -> String {
    let bytes: [u8; N] = rand::random();
    hex(&bytes)
}

fn new_key() -> String {
    format!("cmp_{}", random_hex::<24>())
}

pub(crate) async fn run(settings: &Settings, cmd: KeysCommand) -> anyhow::Result<()> {
    let db = ops::connect_database(settings).await?;
    let stores = store::Stores::new(db);
    match cmd {
        KeysCommand::Create { name, role } => {
            let name = name.trim();
            if name.is_empty() {
                anyhow::bail!("--name must not be empty");
            }
            let role: ApiKeyRole = role
                .parse()
                .map_err(|e: String| anyhow::anyhow!("--role: {e}"))?;
            let key = new_key();
            let stored = stores.api_keys.insert(name, role, &hash_key(&key)).await?;
            println!(
                "created key {} ({}, {})",
                stored.id, stored.name, stored.role
            );
            println!("{key}");
        }
        KeysCommand::Revoke { id } => {
            if stores.api_keys.revoke(ApiKeyId(id)).await? {
                println!("revoked key {id}");
            } else {
                anyhow::bail!("no live key with id {id}");
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_random_and_hashes_stable() {
        let (a, b) = (new_key(), new_key());
        assert_ne!(a, b);
        assert!(a.starts_with("cmp_") && a.len() == 52);
        assert_eq!(hash_key("x"), hash_key("x"));
        assert_eq!(hash_key("abc").len(), 64);
    }
}
