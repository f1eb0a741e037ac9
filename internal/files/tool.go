package files

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
)

// The Claude memory tool (tool type memory_20250818, name "memory"): the
// command set, result strings and error strings of the reference
// implementation in Anthropic's SDKs (anthropic-sdk-python,
// lib/tools/_beta_builtin_memory_tool.py, BetaLocalFilesystemMemoryTool),
// over memory files instead of a directory. Directories are implicit: a
// path is a directory when files live under it, and /memories always is.

// ToolInput is the memory tool's input (a tool_use block's input).
type ToolInput struct {
	Command    string `json:"command"`
	Path       string `json:"path,omitempty"`
	ViewRange  []int  `json:"view_range,omitempty"`
	FileText   string `json:"file_text,omitempty"`
	OldStr     string `json:"old_str,omitempty"`
	NewStr     string `json:"new_str,omitempty"`
	InsertLine *int   `json:"insert_line,omitempty"`
	InsertText string `json:"insert_text,omitempty"`
	OldPath    string `json:"old_path,omitempty"`
	NewPath    string `json:"new_path,omitempty"`
}

// ToolResult is the content of the tool_result block to send back;
// IsError is the block's is_error (the reference raises ToolError).
type ToolResult struct {
	Content string `json:"content"`
	IsError bool   `json:"is_error,omitempty"`
}

// toolError is a ToolError of the reference: its message is the result.
type toolError string

func (e toolError) Error() string { return string(e) }

const lineWidth = 6 // len(str(999999)), the reference's MAX_LINES
const maxLines = 999999

// Tool runs one memory tool command as p, on files of scope sc. Errors
// the model should read (a missing path, a failed replacement, and also
// memgate refusing a write) come back as an error result; only a failure
// of memgate itself (the database is unavailable) is an error.
func (s *Service) Tool(ctx context.Context, p memory.Principal, sc memory.Scope, raw json.RawMessage) (ToolResult, error) {
	var in ToolInput
	if err := json.Unmarshal(raw, &in); err != nil {
		return ToolResult{}, fault.Field("input", "must be a memory tool input object")
	}
	out, err := s.tool(ctx, p, sc, in)
	if err == nil {
		return ToolResult{Content: out}, nil
	}
	if te, ok := err.(toolError); ok {
		return ToolResult{Content: string(te), IsError: true}, nil
	}
	fe := fault.As(err)
	switch fe.Code {
	case fault.Internal, fault.Unavailable:
		return ToolResult{}, err
	}
	return ToolResult{Content: "Error: " + fe.Message, IsError: true}, nil
}

// ToolCommands are the memory tool's commands, in the reference's order;
// the MCP schema offers exactly these.
var ToolCommands = []string{"view", "create", "str_replace", "insert", "delete", "rename"}

func (s *Service) tool(ctx context.Context, p memory.Principal, sc memory.Scope, in ToolInput) (string, error) {
	switch in.Command {
	case "view":
		return s.toolView(ctx, p, sc, in)
	case "create":
		return s.toolCreate(ctx, p, sc, in)
	case "str_replace":
		return s.toolStrReplace(ctx, p, sc, in)
	case "insert":
		return s.toolInsert(ctx, p, sc, in)
	case "delete":
		return s.toolDelete(ctx, p, sc, in)
	case "rename":
		return s.toolRename(ctx, p, sc, in)
	}
	return "", toolError("Unknown command: " + in.Command)
}

// resolve is the reference's _validate_path: the path must start with
// /memories and may not resolve outside it. It returns the resolved path
// ("/memories" for the root itself).
func resolve(p string) (string, error) {
	if !strings.HasPrefix(p, Root) {
		return "", toolError("Path must start with /memories, got: " + p)
	}
	rel := strings.TrimLeft(p[len(Root):], "/")
	full := path.Clean(Root + "/" + rel)
	if full != Root && !strings.HasPrefix(full, Root+"/") {
		return "", toolError("Path " + p + " would escape /memories directory")
	}
	return full, nil
}

// entry is what a resolved path names right now.
type entry int

const (
	missing entry = iota
	isFileEntry
	isDir
)

// stat says whether full is a file, a directory or nothing, given the
// scope's live paths.
func stat(paths map[string]string, full string) entry {
	if full == Root {
		return isDir
	}
	if _, ok := paths[full]; ok {
		return isFileEntry
	}
	for p := range paths {
		if strings.HasPrefix(p, full+"/") {
			return isDir
		}
	}
	return missing
}

// formatSize is the reference's _format_file_size.
func formatSize(n int) string {
	if n == 0 {
		return "0B"
	}
	sizes := []string{"B", "K", "M", "G"}
	i := 0
	for b := n; b >= 1024 && i < len(sizes)-1; b >>= 10 {
		i++
	}
	size := float64(n) / float64(int(1)<<(10*i))
	if size == float64(int(size)) {
		return strconv.Itoa(int(size)) + sizes[i]
	}
	return strconv.FormatFloat(size, 'f', 1, 64) + sizes[i]
}

// dirSize is what a directory shows as its size: the reference shows the
// directory entry's own st_size, 4096 on common Linux file systems.
const dirSize = "4.0K"

func numbered(lines []string, start int) string {
	var b strings.Builder
	for i, l := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		n := strconv.Itoa(i + start)
		b.WriteString(strings.Repeat(" ", max(0, lineWidth-len(n))))
		b.WriteString(n)
		b.WriteByte('\t')
		b.WriteString(l)
	}
	return b.String()
}

func (s *Service) toolView(ctx context.Context, p memory.Principal, sc memory.Scope, in ToolInput) (string, error) {
	full, err := resolve(in.Path)
	if err != nil {
		return "", err
	}
	paths, err := s.paths(ctx, p.Workspace, sc)
	if err != nil {
		return "", err
	}
	switch stat(paths, full) {
	case isDir:
		return s.viewDir(ctx, p, sc, paths, full, in.Path)
	case isFileEntry:
		f, err := s.Read(ctx, p, sc, full)
		if err != nil {
			return "", notExist(in.Path, err)
		}
		lines := strings.Split(f.Content, "\n")
		if len(lines) > maxLines {
			return "", toolError("File " + in.Path + " exceeds maximum line limit of 999,999 lines.")
		}
		start := 1
		if len(in.ViewRange) == 2 {
			from := max(1, in.ViewRange[0]) - 1
			to := len(lines)
			if in.ViewRange[1] != -1 {
				to = in.ViewRange[1]
			}
			lines = pySlice(lines, from, to)
			start = from + 1
		}
		return "Here's the content of " + in.Path + " with line numbers:\n" + numbered(lines, start), nil
	}
	return "", toolError("The path " + in.Path + " does not exist. Please provide a valid path.")
}

// pySlice is Python's lines[from:to] for from >= 0.
func pySlice(lines []string, from, to int) []string {
	if to < 0 {
		to += len(lines)
	}
	to = min(max(to, 0), len(lines))
	if from >= to {
		return nil
	}
	return lines[from:to]
}

// notExist maps a file that vanished (or that p may not read) to the
// reference's missing-path error.
func notExist(p string, err error) error {
	if fault.CodeOf(err) == fault.NotFound {
		return toolError("The path " + p + " does not exist. Please provide a valid path.")
	}
	return err
}

// viewDir lists up to two levels under full, sorted by name, hidden items
// (names starting with '.') left out, as the reference does.
func (s *Service) viewDir(ctx context.Context, p memory.Principal, sc memory.Scope, paths map[string]string, full, shown string) (string, error) {
	type node struct {
		size  int
		isDir bool
	}
	items := map[string]node{} // path relative to full
	base := full + "/"
	for fp := range paths {
		if !strings.HasPrefix(fp, base) {
			continue
		}
		segs := strings.Split(fp[len(base):], "/")
		hidden := false
		for i := range min(len(segs), 2) {
			if strings.HasPrefix(segs[i], ".") {
				hidden = true
			}
		}
		if hidden {
			continue
		}
		if len(segs) > 2 {
			items[segs[0]] = node{isDir: true}
			items[segs[0]+"/"+segs[1]] = node{isDir: true}
			continue
		}
		if len(segs) == 2 {
			items[segs[0]] = node{isDir: true}
		}
		f, err := s.Read(ctx, p, sc, fp)
		if fault.CodeOf(err) == fault.NotFound {
			continue
		}
		if err != nil {
			return "", err
		}
		items[strings.Join(segs, "/")] = node{size: f.SizeBytes}
	}
	names := make([]string, 0, len(items))
	for n := range items {
		names = append(names, n)
	}
	// Depth-first, each directory's entries by name: compare segment-wise.
	slices.SortFunc(names, func(a, b string) int {
		return slices.Compare(strings.Split(a, "/"), strings.Split(b, "/"))
	})
	var b strings.Builder
	b.WriteString("Here're the files and directories up to 2 levels deep in " + shown + ", excluding hidden items:\n")
	b.WriteString(dirSize + "\t" + shown)
	for _, n := range names {
		it := items[n]
		if it.isDir {
			b.WriteString("\n" + dirSize + "\t" + shown + "/" + n + "/")
		} else {
			b.WriteString("\n" + formatSize(it.size) + "\t" + shown + "/" + n)
		}
	}
	return b.String(), nil
}

func (s *Service) toolCreate(ctx context.Context, p memory.Principal, sc memory.Scope, in ToolInput) (string, error) {
	full, err := resolve(in.Path)
	if err != nil {
		return "", err
	}
	paths, err := s.paths(ctx, p.Workspace, sc)
	if err != nil {
		return "", err
	}
	if stat(paths, full) != missing {
		return "", toolError("File " + in.Path + " already exists")
	}
	res, err := s.Create(ctx, p, CreateRequest{Path: full, Content: in.FileText, Scope: sc})
	if fault.CodeOf(err) == fault.Conflict {
		return "", toolError("File " + in.Path + " already exists")
	}
	if err != nil {
		return "", err
	}
	if err := heldBack(res, in.Path); err != nil {
		return "", err
	}
	return "File created successfully at: " + in.Path, nil
}

// editable reads the file a str_replace or insert works on.
func (s *Service) editable(ctx context.Context, p memory.Principal, sc memory.Scope, shown string) (File, error) {
	full, err := resolve(shown)
	if err != nil {
		return File{}, err
	}
	paths, err := s.paths(ctx, p.Workspace, sc)
	if err != nil {
		return File{}, err
	}
	switch stat(paths, full) {
	case missing:
		return File{}, toolError("The path " + shown + " does not exist. Please provide a valid path.")
	case isDir:
		return File{}, toolError("The path " + shown + " is not a file.")
	}
	f, err := s.Read(ctx, p, sc, full)
	if fault.CodeOf(err) == fault.NotFound {
		return File{}, toolError("The file " + shown + " no longer exists (may have been deleted or renamed concurrently).")
	}
	return f, err
}

// occurrences returns the byte offsets of old in content as Python's
// str.find loop visits them (overlapping, one code point apart), and
// str.count's count (non-overlapping).
func occurrences(content, old string) (positions []int, count int) {
	if old == "" {
		for i := range content {
			positions = append(positions, i)
		}
		positions = append(positions, len(content))
		return positions, utf8.RuneCountInString(content) + 1
	}
	for start := 0; start <= len(content); {
		i := strings.Index(content[start:], old)
		if i < 0 {
			break
		}
		pos := start + i
		positions = append(positions, pos)
		_, w := utf8.DecodeRuneInString(content[pos:])
		start = pos + max(w, 1)
	}
	return positions, strings.Count(content, old)
}

func (s *Service) toolStrReplace(ctx context.Context, p memory.Principal, sc memory.Scope, in ToolInput) (string, error) {
	f, err := s.editable(ctx, p, sc, in.Path)
	if err != nil {
		return "", err
	}
	positions, count := occurrences(f.Content, in.OldStr)
	switch {
	case count == 0:
		return "", toolError("No replacement was performed, old_str `" + in.OldStr + "` did not appear verbatim in " + in.Path + ".")
	case count > 1:
		nums := make([]string, len(positions))
		for i, pos := range positions {
			nums[i] = strconv.Itoa(strings.Count(f.Content[:pos], "\n") + 1)
		}
		return "", toolError("No replacement was performed. Multiple occurrences of old_str `" + in.OldStr + "` in lines: " +
			strings.Join(nums, ", ") + ". Please ensure it is unique")
	}
	changed := strings.Count(f.Content[:positions[0]], "\n")
	next := strings.Replace(f.Content, in.OldStr, in.NewStr, 1)
	res, err := s.writeTool(ctx, p, f, next)
	if err != nil {
		return "", err
	}
	if err := heldBack(res, in.Path); err != nil {
		return "", err
	}
	lines := strings.Split(next, "\n")
	from, to := max(0, changed-2), min(len(lines), changed+3)
	return "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n" +
		numbered(lines[from:to], from+1), nil
}

// heldBack is the error a tool answers when the gate quarantined what it
// wrote: a quarantined version is readable by operators only, so the
// reference's success text would tell the model it stored something it
// cannot read back. A restricted agent's queued version stays readable by
// its writer, so it answers success as the reference does.
func heldBack(res Result, path string) error {
	if res.Decision != memory.DecisionQuarantined {
		return nil
	}
	msg := "Error: " + path + " was not saved where you can read it: its content looks like personal data or a secret"
	if len(res.PIIKinds) > 0 {
		msg += " (" + strings.Join(res.PIIKinds, ", ") + ")"
	}
	return toolError(msg + ", so it waits for an operator's review. Remove that content and write it again.")
}

// writeTool writes a tool's new content as the file's next version,
// guarded by the content the tool read.
func (s *Service) writeTool(ctx context.Context, p memory.Principal, f File, content string) (Result, error) {
	if err := s.checkContent(content); err != nil {
		return Result{}, err
	}
	head, err := s.core.Get(ctx, p, f.ID, getSensitive)
	if err != nil {
		return Result{}, err
	}
	return s.UpdateRecord(ctx, p, head, UpdateRequest{Content: &content, ExpectedSHA256: f.ContentSHA256})
}

// splitLines is Python's str.splitlines(): every line boundary Python
// knows, no trailing empty line.
func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		switch r {
		case '\n', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
			out = append(out, s[start:i])
			start = i + w
		case '\r':
			out = append(out, s[start:i])
			if i+1 < len(s) && s[i+1] == '\n' {
				w = 2
			}
			start = i + w
		}
		i += w
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

func (s *Service) toolInsert(ctx context.Context, p memory.Principal, sc memory.Scope, in ToolInput) (string, error) {
	f, err := s.editable(ctx, p, sc, in.Path)
	if err != nil {
		return "", err
	}
	lines := splitLines(f.Content)
	at := 0
	if in.InsertLine != nil {
		at = *in.InsertLine
	}
	if at < 0 || at > len(lines) {
		return "", toolError(fmt.Sprintf("Invalid `insert_line` parameter: %d. It should be within the range [0, %d].", at, len(lines)))
	}
	lines = slices.Insert(lines, at, strings.TrimRight(in.InsertText, "\n"))
	next := strings.Join(lines, "\n")
	if !strings.HasSuffix(next, "\n") {
		next += "\n"
	}
	res, err := s.writeTool(ctx, p, f, next)
	if err != nil {
		return "", err
	}
	if err := heldBack(res, in.Path); err != nil {
		return "", err
	}
	return "The file " + in.Path + " has been edited.", nil
}

// under returns the live paths at full: the file itself, or every file
// under the directory.
func under(paths map[string]string, full string) []string {
	var out []string
	for fp := range paths {
		if fp == full || full == Root || strings.HasPrefix(fp, full+"/") {
			out = append(out, fp)
		}
	}
	slices.Sort(out)
	return out
}

func (s *Service) toolDelete(ctx context.Context, p memory.Principal, sc memory.Scope, in ToolInput) (string, error) {
	full, err := resolve(in.Path)
	if err != nil {
		return "", err
	}
	if in.Path == Root {
		return "", toolError("Cannot delete the /memories directory itself")
	}
	paths, err := s.paths(ctx, p.Workspace, sc)
	if err != nil {
		return "", err
	}
	if stat(paths, full) == missing {
		return "", toolError("The path " + in.Path + " does not exist")
	}
	for _, fp := range under(paths, full) {
		if _, err := s.Delete(ctx, p, sc, fp, ""); err != nil {
			if fault.CodeOf(err) == fault.NotFound {
				return "", toolError("The path " + in.Path + " does not exist")
			}
			return "", err
		}
	}
	return "Successfully deleted " + in.Path, nil
}

func (s *Service) toolRename(ctx context.Context, p memory.Principal, sc memory.Scope, in ToolInput) (string, error) {
	from, err := resolve(in.OldPath)
	if err != nil {
		return "", err
	}
	to, err := resolve(in.NewPath)
	if err != nil {
		return "", err
	}
	paths, err := s.paths(ctx, p.Workspace, sc)
	if err != nil {
		return "", err
	}
	if stat(paths, to) != missing {
		return "", toolError("The destination " + in.NewPath + " already exists")
	}
	kind := stat(paths, from)
	if kind == missing {
		return "", toolError("The path " + in.OldPath + " does not exist")
	}
	if from == Root || strings.HasPrefix(to, from+"/") {
		// A directory cannot move into itself (the reference's rename
		// fails with the operating system's error).
		return "", toolError("Error: cannot move " + in.OldPath + " into itself")
	}
	for _, fp := range under(paths, from) {
		dst := to + fp[len(from):]
		if _, err := s.Rename(ctx, p, sc, fp, dst); err != nil {
			if fault.CodeOf(err) == fault.NotFound {
				return "", toolError("The path " + in.OldPath + " does not exist")
			}
			return "", err
		}
	}
	return "Successfully renamed " + in.OldPath + " to " + in.NewPath, nil
}
