package bench

// Copying a kept benchmark store, so every run of a benchmark starts from
// the same state without building it again.

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// CopyDir copies the regular files under src to dst (created, private to
// the user), reporting progress in MiB on progress when set. Lock files
// and anything that is not a regular file or directory are skipped.
func CopyDir(ctx context.Context, src, dst string, progress io.Writer) error {
	var total int64
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		total += info.Size()
		return nil
	})
	if err != nil {
		return fmt.Errorf("bench: copy %s: %w", src, err)
	}
	bar := startProgress(progress, false, "copy MiB", int((total+(1<<20)-1)>>20))
	var copied int64
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o700)
		case !d.Type().IsRegular(), filepath.Ext(p) == ".lock":
			return nil
		}
		return copyFile(ctx, p, to, func(n int64) {
			before := copied >> 20
			copied += n
			bar.add(int(copied>>20 - before))
		})
	})
	bar.finish()
	if err != nil {
		return fmt.Errorf("bench: copy %s: %w", src, err)
	}
	return nil
}

// copyFile copies one file, calling wrote with each chunk's size; it
// stops when ctx ends (a store's database is gigabytes).
func copyFile(ctx context.Context, from, to string, wrote func(int64)) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	buf := make([]byte, 4<<20)
	for {
		if err := ctx.Err(); err != nil {
			out.Close()
			return err
		}
		n, rerr := in.Read(buf)
		if n > 0 {
			if _, err := out.Write(buf[:n]); err != nil {
				out.Close()
				return err
			}
			wrote(int64(n))
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			out.Close()
			return rerr
		}
	}
	return out.Close()
}
