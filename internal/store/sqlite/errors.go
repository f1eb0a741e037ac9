package sqlite

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/memgate/memgate/internal/store"
)

// mapErr wraps err for the operation op, translating driver errors into the
// store's sentinels while keeping the driver error in the chain for logs.
func mapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s: %w", op, store.ErrNotFound)
	}
	if sentinel := classify(err); sentinel != nil {
		return fmt.Errorf("%s: %w: %w", op, sentinel, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// classify returns the store sentinel an error stands for, or nil.
func classify(err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		code := se.Code()
		switch code {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return store.ErrExists
		case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
			// A row refers to a workspace or record that does not exist.
			return store.ErrNotFound
		}
		switch code & 0xff {
		case sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN,
			sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_NOMEM,
			sqlite3.SQLITE_PROTOCOL, sqlite3.SQLITE_READONLY:
			return store.ErrUnavailable
		}
		return nil
	}
	if errors.Is(err, sql.ErrConnDone) || errors.Is(err, driver.ErrBadConn) {
		return store.ErrUnavailable
	}
	return nil
}
