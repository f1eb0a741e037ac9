package cli

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/files"
	"github.com/memgate/memgate/internal/memory"
)

// memgate files: memory files (internal/files) from the command line, as
// the workspace's operator: ls, cat, edit ($EDITOR), history, and import
// and export of a directory of files, which round-trip byte for byte.

func runFiles(env Env, args []string) error {
	sub, args, err := subcommand(args, "ls", "cat", "edit", "history", "import", "export")
	if err != nil {
		return err
	}
	fset, cfg := flags(env, "files "+sub, false)
	var asJSON bool
	var prefix string
	var scope multiFlag
	fset.Var(&scope, "scope", "scope key=value of the files (repeatable): user_id, agent_id, app_id, project_id, session_id")
	if sub == "ls" || sub == "cat" || sub == "history" {
		fset.BoolVar(&asJSON, "json", false, "print JSON")
	}
	if sub == "ls" || sub == "export" {
		fset.StringVar(&prefix, "prefix", files.Root, "only files under this directory")
	}
	var pos []string
	if sub == "ls" {
		err = parse(env, fset, cfg, args)
	} else {
		what := "file path"
		if sub == "import" || sub == "export" {
			what = "directory"
		}
		var p string
		p, err = positional(env, fset, cfg, args, what)
		pos = []string{p}
	}
	if err != nil {
		return err
	}
	sc, err := parseScope(scope)
	if err != nil {
		return err
	}
	return withApp(env, cfg, false, func(ctx context.Context, a *app) error {
		fsvc := files.New(a.svc, files.Options{})
		op := a.operator()
		switch sub {
		case "ls":
			list, err := fsvc.List(ctx, op, files.ListRequest{Prefix: prefix, Scope: sc})
			if err != nil {
				return err
			}
			return output(env, asJSON, map[string]any{"files": list}, func(w io.Writer) {
				for _, f := range list {
					pin := ""
					if f.Pinned {
						pin = "  pinned"
					}
					fmt.Fprintf(w, "%8d  v%-3d %s  %s%s\n", f.SizeBytes, f.Version, f.UpdatedAt.Format(time.RFC3339), f.Path, pin)
				}
			})
		case "cat":
			f, err := fsvc.Read(ctx, op, sc, pos[0])
			if err != nil {
				return err
			}
			if asJSON {
				return output(env, true, f, nil)
			}
			_, err = io.WriteString(env.Stdout, f.Content)
			return err
		case "history":
			vs, err := fsvc.History(ctx, op, sc, pos[0])
			if err != nil {
				return err
			}
			return output(env, asJSON, map[string]any{"versions": vs}, func(w io.Writer) {
				for _, v := range vs {
					state := string(v.Status)
					switch {
					case v.Redacted:
						state = "redacted"
					case v.Deleted:
						state = "deleted"
					}
					fmt.Fprintf(w, "v%d  %s  %s  %s  %s  %s\n", v.Version, v.UpdatedAt.Format(time.RFC3339), state, v.ContentSHA256[:12], v.Author, v.Path)
				}
			})
		case "edit":
			return editFile(ctx, env, fsvc, op, sc, pos[0])
		case "import":
			return importFiles(ctx, env, fsvc, op, sc, pos[0])
		case "export":
			return exportFiles(ctx, env, fsvc, op, sc, prefix, pos[0])
		}
		return nil
	})
}

// editFile opens the file (empty if new) in $EDITOR and writes what the
// editor saved as its next version, guarded by the hash it started from.
func editFile(ctx context.Context, env Env, fsvc *files.Service, op memory.Principal, sc memory.Scope, path string) error {
	editor := env.Getenv("EDITOR")
	if editor == "" {
		return usagef("set $EDITOR to edit files")
	}
	cur, err := fsvc.Read(ctx, op, sc, path)
	exists := err == nil
	if err != nil && fault.CodeOf(err) != fault.NotFound {
		return err
	}
	tmp, err := os.CreateTemp("", "memgate-*"+filepath.Ext(path))
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(cur.Content); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	// $EDITOR may carry arguments ("code --wait"), as shells allow.
	argv := append(strings.Fields(editor), tmp.Name())
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, env.Stdout, env.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("editor: %w", err)
	}
	raw, err := os.ReadFile(tmp.Name())
	if err != nil {
		return err
	}
	next := string(raw)
	switch {
	case exists && next == cur.Content:
		fmt.Fprintln(env.Stderr, "unchanged")
		return nil
	case !exists:
		res, err := fsvc.Create(ctx, op, files.CreateRequest{Path: path, Content: next, Scope: sc})
		if err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "%s v%d %s\n", res.File.Path, res.File.Version, res.Decision)
		return nil
	}
	res, err := fsvc.Update(ctx, op, sc, path, files.UpdateRequest{Content: &next, ExpectedSHA256: cur.ContentSHA256})
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "%s v%d %s\n", res.File.Path, res.File.Version, res.Decision)
	return nil
}

// importFiles writes every regular file under dir as /memories/<relative
// path>: new files are created, changed ones get a new version, identical
// ones are left alone.
func importFiles(ctx context.Context, env Env, fsvc *files.Service, op memory.Principal, sc memory.Scope, dir string) error {
	var created, updated, same int
	progress := newProgressLog(env.Stderr).count("files import", "files")
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		progress(created + updated + same)
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		path, content := files.Root+"/"+filepath.ToSlash(rel), string(raw)
		cur, err := fsvc.Read(ctx, op, sc, path)
		switch {
		case err == nil && cur.Content == content:
			same++
			return nil
		case err == nil:
			_, err = fsvc.Update(ctx, op, sc, path, files.UpdateRequest{Content: &content, ExpectedSHA256: cur.ContentSHA256})
			updated++
		case fault.CodeOf(err) == fault.NotFound:
			_, err = fsvc.Create(ctx, op, files.CreateRequest{Path: path, Content: content, Scope: sc})
			created++
		}
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "imported: %d created, %d updated, %d unchanged\n", created, updated, same)
	return nil
}

// exportFiles writes every live file under prefix into dir, byte for byte.
func exportFiles(ctx context.Context, env Env, fsvc *files.Service, op memory.Principal, sc memory.Scope, prefix, dir string) error {
	list, err := fsvc.List(ctx, op, files.ListRequest{Prefix: prefix, Scope: sc})
	if err != nil {
		return err
	}
	progress := newProgressLog(env.Stderr).count("files export", "files of "+strconv.Itoa(len(list)))
	for i, f := range list {
		progress(i)
		rel := filepath.FromSlash(strings.TrimPrefix(f.Path, files.Root+"/"))
		dst := filepath.Join(dir, rel)
		if !strings.HasPrefix(dst, filepath.Clean(dir)+string(filepath.Separator)) {
			return fmt.Errorf("%s: outside the directory", f.Path) // CleanPath makes this impossible; checked anyway
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(dst, []byte(f.Content), 0o600); err != nil {
			return err
		}
	}
	fmt.Fprintf(env.Stdout, "exported %d files\n", len(list))
	return nil
}
