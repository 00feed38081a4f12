package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrations bring the schema from version i to i+1; the version reached is
// kept in schema_version. Append only: a released migration never changes.
//
// runs.last_seq mirrors the log's last Seq, kept in the same transaction as
// the entries: an append locks the run's row (FOR UPDATE) and checks it,
// which serializes writers to one run across processes; the primary key
// (run, seq) is the backstop. runs.n is insertion order, ListRuns' tie
// breaker.
var migrations = []string{
	`CREATE TABLE runs (
		n           bigserial   NOT NULL,
		id          text        PRIMARY KEY,
		parent      text        NOT NULL,
		goal        text        NOT NULL,
		labels      text[]      NOT NULL,
		status      text        NOT NULL,
		question    text        NOT NULL,
		task        bytea,
		result      bytea,
		steps       bigint      NOT NULL,
		cost_micros bigint      NOT NULL,
		created     timestamptz NOT NULL,
		updated     timestamptz NOT NULL,
		last_seq    bigint      NOT NULL DEFAULT 0
	);
	CREATE INDEX runs_created ON runs (created DESC, n DESC);
	CREATE INDEX runs_parent ON runs (parent, created DESC);
	CREATE INDEX runs_status ON runs (status text_pattern_ops);
	CREATE INDEX runs_labels ON runs USING gin (labels);
	CREATE TABLE entries (
		run  text        NOT NULL REFERENCES runs (id),
		seq  bigint      NOT NULL,
		kind text        NOT NULL,
		at   timestamptz NOT NULL,
		data bytea       NOT NULL,
		PRIMARY KEY (run, seq)
	);
	CREATE TABLE snapshots (
		run  text   PRIMARY KEY REFERENCES runs (id),
		seq  bigint NOT NULL,
		data bytea  NOT NULL
	);`,
	// 2: the lease of the process carrying a run out.
	`ALTER TABLE runs ADD COLUMN holder text NOT NULL DEFAULT '',
		ADD COLUMN heartbeat timestamptz;`,
	// 3: forks (the run and entry a run was forked from) and the messages
	// a person sends a running run, queued until its process logs them.
	`ALTER TABLE runs ADD COLUMN fork_of text NOT NULL DEFAULT '',
		ADD COLUMN fork_seq bigint NOT NULL DEFAULT 0;
	CREATE TABLE messages (
		id   bigserial   PRIMARY KEY,
		run  text        NOT NULL REFERENCES runs (id),
		text text        NOT NULL,
		at   timestamptz NOT NULL
	);
	CREATE INDEX messages_run ON messages (run, id);`,
	// 4: the provider limits every process on the database shares
	// (ledger.go): the slots of attempts, the tokens spent, the pauses.
	`CREATE TABLE limit_slots (
		id       bigserial   PRIMARY KEY,
		provider text        NOT NULL,
		owner    text        NOT NULL,
		replied  timestamptz,
		closed   boolean     NOT NULL DEFAULT false,
		lease    timestamptz NOT NULL
	);
	CREATE INDEX limit_slots_replied ON limit_slots (provider, replied);
	CREATE INDEX limit_slots_open ON limit_slots (provider) WHERE NOT closed;
	CREATE INDEX limit_slots_owner ON limit_slots (owner) WHERE NOT closed;
	CREATE TABLE limit_tokens (
		provider text        NOT NULL,
		at       timestamptz NOT NULL,
		tokens   bigint      NOT NULL
	);
	CREATE INDEX limit_tokens_provider ON limit_tokens (provider, at);
	CREATE TABLE limit_pauses (
		provider text        PRIMARY KEY,
		until    timestamptz NOT NULL
	);`,
}

// migrateLock is the advisory lock key that serializes migrations of one
// database ("ratchet" in ASCII).
const migrateLock = 0x72617463686574

// migrate creates schema (if not "") and brings it to the newest version in
// one transaction, under an advisory lock so that concurrent openers wait
// for one another.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrateLock)); err != nil {
			return err
		}
		if schema != "" {
			if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{schema}.Sanitize()); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version int NOT NULL)`); err != nil {
			return err
		}
		var v int
		err := tx.QueryRow(ctx, `SELECT version FROM schema_version`).Scan(&v)
		if errors.Is(err, pgx.ErrNoRows) {
			_, err = tx.Exec(ctx, `INSERT INTO schema_version (version) VALUES (0)`)
		}
		if err != nil {
			return err
		}
		if v > len(migrations) {
			return fmt.Errorf("database schema version %d is newer than this build knows (%d)", v, len(migrations))
		}
		for i := v; i < len(migrations); i++ {
			if _, err := tx.Exec(ctx, migrations[i]); err != nil {
				return fmt.Errorf("migration %d: %w", i+1, err)
			}
		}
		if v < len(migrations) {
			if _, err := tx.Exec(ctx, `UPDATE schema_version SET version = $1`, len(migrations)); err != nil {
				return err
			}
		}
		return nil
	})
}
