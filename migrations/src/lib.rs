pub struct Migrator;
