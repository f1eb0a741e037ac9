package mcp

import (
	"context"
	"encoding/json"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/files"
	"github.com/memgate/memgate/internal/memory"
)

// Memory files (internal/files) over MCP: the Claude memory tool as the
// tool "memory", taking the same input, and the block tools of SPEC §12
// for curated blocks such as MEMORY.md and USER.md.

const blockDoc = " Blocks are memory files under /memories (MEMORY.md, USER.md, ...), pinned into every context, versioned and audited; " +
	"name is a file name such as MEMORY.md or a full path under /memories/."

type blockIn struct {
	Name  string   `json:"name" jsonschema:"the block: a file name such as MEMORY.md, or a path under /memories/"`
	Scope *scopeIn `json:"scope,omitempty" jsonschema:"whose block: scope keys, all optional"`
}

type blockAppendIn struct {
	Name  string   `json:"name" jsonschema:"the block: a file name such as MEMORY.md, or a path under /memories/"`
	Text  string   `json:"text" jsonschema:"text to add at the end of the block (a newline is put before it if the block does not end with one)"`
	Scope *scopeIn `json:"scope,omitempty" jsonschema:"whose block: scope keys, all optional"`
}

type blockReplaceIn struct {
	Name    string   `json:"name" jsonschema:"the block: a file name such as MEMORY.md, or a path under /memories/"`
	Content string   `json:"content" jsonschema:"the block's whole new text"`
	Scope   *scopeIn `json:"scope,omitempty" jsonschema:"whose block: scope keys, all optional"`
	// ExpectedSHA256 guards against overwriting an edit made meanwhile.
	ExpectedSHA256 string `json:"expected_content_sha256,omitempty" jsonschema:"the content_sha256 block_read returned; the replace fails with a conflict if the block changed since"`
}

type blockOut struct {
	ID            string `json:"id,omitempty"`
	Path          string `json:"path"`
	Content       string `json:"content"`
	ContentSHA256 string `json:"content_sha256"`
	Version       int    `json:"version"`
	Pinned        bool   `json:"pinned"`
	Exists        bool   `json:"exists"`
	Decision      string `json:"decision,omitempty"`
	ApprovalID    string `json:"approval_id,omitempty"`
}

func blockPath(name string) string {
	if strings.HasPrefix(name, "/") {
		return name
	}
	return files.Root + "/" + name
}

func viewBlock(f files.File) blockOut {
	return blockOut{ID: f.ID, Path: f.Path, Content: f.Content, ContentSHA256: f.ContentSHA256, Version: f.Version, Pinned: f.Pinned, Exists: true}
}

func viewChange(r files.Result) blockOut {
	b := viewBlock(r.File)
	b.Decision, b.ApprovalID = r.Decision, r.ApprovalID
	return b
}

// writeBlock replaces a block's text, creating it (pinned) if absent.
func writeBlock(ctx context.Context, fs *files.Service, p memory.Principal, sc memory.Scope, path, content, expected string) (blockOut, error) {
	_, err := fs.Read(ctx, p, sc, path)
	if fault.CodeOf(err) == fault.NotFound {
		if expected != "" {
			return blockOut{}, fault.New(fault.Conflict, "the block does not exist: expected_content_sha256 does not match").With("field", "expected_content_sha256")
		}
		r, err := fs.Create(ctx, p, files.CreateRequest{Path: path, Content: content, Scope: sc, Pinned: true})
		if err != nil {
			return blockOut{}, err
		}
		return viewChange(r), nil
	}
	if err != nil {
		return blockOut{}, err
	}
	r, err := fs.Update(ctx, p, sc, path, files.UpdateRequest{Content: &content, ExpectedSHA256: expected})
	if err != nil {
		return blockOut{}, err
	}
	return viewChange(r), nil
}

func (s *server) addFileTools(srv *sdk.Server) {
	fs := s.files

	in := schemaFor[files.ToolInput](false, map[string][]string{"command": files.ToolCommands})
	in.Required = []string{"command"}
	sdk.AddTool(srv, &sdk.Tool{
		Name:  "memory",
		Title: "Memory directory",
		Description: "Claude's memory tool (memory_20250818) over memgate: view, create, str_replace, insert, delete and rename files under /memories, " +
			"with the same input and the same result texts as Anthropic's reference implementation. Files are memgate memory files: " +
			"every change passes the gate and is audited, and each version is kept.",
		InputSchema: in,
		Annotations: writeHints(false), // every version is kept
	}, func(ctx context.Context, req *sdk.CallToolRequest, in files.ToolInput) (*sdk.CallToolResult, any, error) {
		p, err := s.who(ctx, req.Extra)
		if err != nil {
			return nil, nil, s.toolError(ctx, "memory", err)
		}
		raw, _ := json.Marshal(in)
		res, err := fs.Tool(ctx, p, memory.Scope{}, raw)
		if err != nil {
			return nil, nil, s.toolError(ctx, "memory", err)
		}
		out := textResult(res.Content)
		out.IsError = res.IsError
		return out, nil, nil
	})

	add(srv, &sdk.Tool{
		Name:        "block_read",
		Title:       "Read a block",
		Description: "Read a curated block; exists is false when it has none yet." + blockDoc + untrustedDoc,
		Annotations: readHints(),
	}, handler(s, "block_read", func(ctx context.Context, p memory.Principal, in blockIn) (blockOut, error) {
		path := blockPath(in.Name)
		f, err := fs.Read(ctx, p, in.Scope.scope(), path)
		if fault.CodeOf(err) == fault.NotFound {
			if _, perr := files.CleanPath(path); perr != nil {
				return blockOut{}, perr
			}
			return blockOut{Path: path, ContentSHA256: memory.SHA256Hex("")}, nil
		}
		if err != nil {
			return blockOut{}, err
		}
		return viewBlock(f), nil
	}))

	add(srv, &sdk.Tool{
		Name:        "block_append",
		Title:       "Append to a block",
		Description: "Add text at the end of a curated block, creating it (pinned) if it does not exist." + blockDoc,
		Annotations: writeHints(false),
	}, handler(s, "block_append", func(ctx context.Context, p memory.Principal, in blockAppendIn) (blockOut, error) {
		path := blockPath(in.Name)
		sc := in.Scope.scope()
		f, err := fs.Read(ctx, p, sc, path)
		if err != nil && fault.CodeOf(err) != fault.NotFound {
			return blockOut{}, err
		}
		content, expected := in.Text, ""
		if err == nil {
			expected = f.ContentSHA256
			sep := ""
			if f.Content != "" && !strings.HasSuffix(f.Content, "\n") {
				sep = "\n"
			}
			content = f.Content + sep + in.Text
		}
		return writeBlock(ctx, fs, p, sc, path, content, expected)
	}))

	add(srv, &sdk.Tool{
		Name:        "block_replace",
		Title:       "Replace a block",
		Description: "Replace a curated block's whole text, creating it (pinned) if it does not exist. Give expected_content_sha256 from block_read to fail rather than overwrite an edit made meanwhile." + blockDoc,
		Annotations: writeHints(false), // every version is kept
	}, handler(s, "block_replace", func(ctx context.Context, p memory.Principal, in blockReplaceIn) (blockOut, error) {
		return writeBlock(ctx, fs, p, in.Scope.scope(), blockPath(in.Name), in.Content, in.ExpectedSHA256)
	}))
}
