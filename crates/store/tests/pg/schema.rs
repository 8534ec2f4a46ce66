use crate::common::{new_card, setup};
use migrations::{Migrator, MigratorTrait};

#[tokio::test]
async fn migration_down_then_up_again() -> anyhow::Result<()> {
    let (db, stores) = setup().await?;
    stores
        .cards
        .insert(&new_card("8986000000000000001"))
        .await?;
    Migrator::down(&db.conn, None).await?;
    assert!(
        stores.cards.count().await.is_err(),
        "the tables are gone after down"
    );
    Migrator::up(&db.conn, None).await?;
    assert_eq!(
        stores.cards.count().await?,
        0,
        "up again gives an empty schema"
    );
    stores
        .cards
        .insert(&new_card("8986000000000000001"))
        .await?;
    assert_eq!(stores.cards.count().await?, 1);
    Ok(())
}
