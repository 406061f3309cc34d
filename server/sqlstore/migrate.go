package sqlstore

import (
	"context"
	"database/sql"
	"embed"
	"path"

	"github.com/boxkite/boxkite/server/sqlstore/sqldb"
)

// migrations holds one directory per dialect of files named NNNN_name.sql,
// applied in order and recorded in schema_migrations.
//
//go:embed migrations
var migrations embed.FS

// loadMigrations reads the dialect's migrations in version order.
func loadMigrations(d dialect) ([]sqldb.Migration, error) {
	return sqldb.LoadMigrations(migrations, path.Join("migrations", d.name))
}

// migrate applies the dialect's migrations not yet applied
// (sqldb.Migrate).
func migrate(ctx context.Context, db *sql.DB, d dialect) error {
	return sqldb.Migrate(ctx, db, migrations, path.Join("migrations", d.name), d.migrateLock, d.rebind)
}
