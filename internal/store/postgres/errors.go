package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/puddle/v2"

	"github.com/memgate/memgate/internal/store"
)

// mapErr wraps err for the operation op, translating driver errors into the
// store's sentinels while keeping the driver error in the chain for logs.
func mapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%s: %w", op, store.ErrNotFound)
	}
	if sentinel := classify(err); sentinel != nil {
		return fmt.Errorf("%s: %w: %w", op, sentinel, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// classify returns the store sentinel an error stands for, or nil.
func classify(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return nil // the caller's own doing: keep ctx.Err() visible, no sentinel
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "23505": // unique_violation
			return store.ErrExists
		case "23503": // foreign_key_violation: a row refers to a missing one
			return store.ErrNotFound
		case "40001", "40P01", // serialization failure, deadlock: retry later
			"55P03",                   // lock_not_available
			"57P01", "57P02", "57P03", // admin or crash shutdown, cannot connect now
			"57014",          // query_canceled (statement_timeout)
			"25006",          // read_only_sql_transaction: a standby, e.g. mid-failover
			"53000", "53100", // insufficient resources, disk full
			"53200", "53300", // out of memory, too many connections
			"58000", "58030": // system error, io error
			return store.ErrUnavailable
		}
		if len(pe.Code) == 5 && pe.Code[:2] == "08" { // connection exception
			return store.ErrUnavailable
		}
		return nil
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	switch {
	case errors.As(err, &ce), errors.As(err, &ne),
		errors.Is(err, puddle.ErrClosedPool), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		pgconn.SafeToRetry(err), pgconn.Timeout(err):
		return store.ErrUnavailable
	}
	return nil
}
