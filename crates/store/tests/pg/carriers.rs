use crate::common::setup;
use domain::store::Page;
use domain::{
    AssumedCall, AssumedCalls, CarrierAccountInput, CarrierId, CarrierProtocol, Credentials,
    Secret, StoreError,
};
use sea_orm::{ConnectionTrait, DbBackend, Statement};

const PASSWORD: &str = "S3cr3t-store-PW";

fn onelink(id: i64) -> CarrierAccountInput {
    CarrierAccountInput {
        carrier_id: CarrierId(id),
        name: format!("carrier {id}"),
        protocol: CarrierProtocol::OneLink,
        base_url: "https://api.example.test/v5/ec".to_owned(),
        credentials: Some(
            Credentials::new()
                .with("appid", "app-1")
                .with("password", PASSWORD),
        ),
        limits: CarrierProtocol::OneLink.default_limits(),
        enabled: true,
    }
}

#[tokio::test]
async fn carriers_round_trip() -> anyhow::Result<()> {
    let (_db, s) = setup().await?;
    assert_eq!(s.carriers.version().await?, (None, 0));
    let b = s.carriers.insert(&onelink(2)).await?;
    let a = s.carriers.insert(&onelink(1)).await?;
    assert_eq!(a.protocol, CarrierProtocol::OneLink);
    assert_eq!(a.limits, CarrierProtocol::OneLink.default_limits());
    assert_eq!(
        a.credentials.get("password").map(Secret::expose),
        Some(PASSWORD)
    );
    assert_eq!(s.carriers.get(a.carrier_id).await?, Some(a.clone()));
    assert_eq!(s.carriers.get(CarrierId(99)).await?, None);
    let all = s.carriers.all().await?;
    assert_eq!(all, vec![a.clone(), b.clone()], "by id");
    let page = s.carriers.list(Page::new(2, 1)).await?;
    assert_eq!((page.total, page.items), (2, vec![b.clone()]));

    match s.carriers.insert(&onelink(1)).await {
        Err(StoreError::Conflict { field, message }) => {
            assert_eq!(field, "carrier_id");
            assert!(!message.contains(PASSWORD));
        }
        other => panic!("expected a conflict on carrier_id, got {other:?}"),
    }
    let (at, n) = s.carriers.version().await?;
    assert_eq!((at, n), (Some(a.updated_at.max(b.updated_at)), 2));

    // An update without credentials keeps them; the other fields are replaced.
    let mut change = onelink(1);
    change.name = "renamed".to_owned();
    change.credentials = None;
    change.limits.batch_size = 7;
    change.limits.assumed_calls = AssumedCalls::NONE.with(AssumedCall::UsageBatch);
    change.enabled = false;
    let updated = s.carriers.update(&change).await?;
    assert_eq!(updated.name, "renamed");
    assert_eq!(updated.limits.batch_size, 7);
    assert_eq!(updated.limits.assumed_calls, change.limits.assumed_calls);
    assert!(a.limits.assumed_calls.is_empty(), "none by default");
    assert!(!updated.enabled);
    assert_eq!(updated.credentials, a.credentials);
    assert_eq!(updated.created_at, a.created_at);
    assert!(updated.updated_at >= a.updated_at);

    // With credentials they are replaced, whole.
    change.protocol = CarrierProtocol::Emnify;
    change.credentials = Some(Credentials::new().with("application_token", "tok"));
    let updated = s.carriers.update(&change).await?;
    assert_eq!(updated.credentials.fields(), vec!["application_token"]);

    let missing = onelink(50);
    assert!(matches!(
        s.carriers.update(&missing).await,
        Err(StoreError::NotFound { .. })
    ));

    let on = s.carriers.set_enabled(CarrierId(1), true).await?;
    assert!(on.is_some_and(|c| c.enabled));
    assert_eq!(s.carriers.set_enabled(CarrierId(50), true).await?, None);
    Ok(())
}

#[tokio::test]
async fn carrier_writes_are_checked_without_echoing_secrets() -> anyhow::Result<()> {
    let (db, s) = setup().await?;
    let mut no_credentials = onelink(3);
    no_credentials.credentials = None;
    assert!(matches!(
        s.carriers.insert(&no_credentials).await,
        Err(StoreError::Invalid(_))
    ));

    // The table's CHECKs are the last guard behind `CarrierAccountInput::validate`; the error
    // names the constraint, never the row.
    let mut bad = onelink(4);
    bad.limits.batch_size = 0;
    match s.carriers.insert(&bad).await {
        Err(StoreError::Invalid(message)) => {
            assert!(message.contains("batch_size"), "{message}");
            assert!(!message.contains(PASSWORD), "{message}");
        }
        other => panic!("expected invalid, got {other:?}"),
    }
    assert_eq!(s.carriers.version().await?.1, 0);

    // A row the domain cannot read is reported by id and column, without its values.
    s.carriers.insert(&onelink(5)).await?;
    db.conn
        .execute_raw(Statement::from_string(
            DbBackend::Postgres,
            format!(
                "UPDATE tb_carrier SET credentials = '{{\"password\": 5, \"appid\": \"{PASSWORD}\"}}'"
            ),
        ))
        .await?;
    match s.carriers.get(CarrierId(5)).await {
        Err(e) => {
            let text = format!("{e} {e:?}");
            assert!(text.contains("credentials"), "{text}");
            assert!(!text.contains(PASSWORD), "{text}");
        }
        Ok(other) => panic!("expected an error, got {other:?}"),
    }
    Ok(())
}
