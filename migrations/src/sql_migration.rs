use sea_orm_migration::prelude::*;

/// A migration written as plain SQL (several statements allowed).
#[derive(Debug, Clone, Copy)]
pub(crate) struct SqlMigration {
    pub(crate) name: &'static str,
    pub(crate) up: &'static str,
    pub(crate) down: &'static str,
}

impl MigrationName for SqlMigration {
    fn name(&self) -> &str {
        self.name
    }
}

#[async_trait::async_trait]
impl MigrationTrait for SqlMigration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        execute(manager, self.up).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        execute(manager, self.down).await
    }
}

/// Runs one migration file as it stands, unprepared, since it may hold several statements.
async fn execute(manager: &SchemaManager<'_>, sql: &str) -> Result<(), DbErr> {
    manager
        .get_connection()
        .execute_unprepared(sql)
        .await
        .map(|_| ())
}
