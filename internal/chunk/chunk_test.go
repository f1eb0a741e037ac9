package chunk

import (
	"strings"
	"testing"
)

func TestSplitMarkdownByHeading(t *testing.T) {
	doc := "Intro text.\n\n# Setup\n\nInstall it.\n\n## Linux\n\nUse apt.\n\n```sh\n# not a heading\napt install x\n```\n\n# Usage\n\nRun it.\n"
	got := Split(doc, true, 0)
	want := []Chunk{
		{Heading: "", Text: "Intro text."},
		{Heading: "Setup", Text: "# Setup\n\nInstall it."},
		{Heading: "Setup > Linux", Text: "## Linux\n\nUse apt.\n\n```sh\n# not a heading\napt install x\n```"},
		{Heading: "Usage", Text: "# Usage\n\nRun it."},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d chunks %q, want %d", len(got), got, len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("chunk %d = %q, want %q", i, got[i], want[i])
		}
	}
}

func TestSplitPlainTextIgnoresHashes(t *testing.T) {
	got := Split("# not a heading\n\nsecond paragraph", false, 0)
	if len(got) != 1 || got[0].Heading != "" || !strings.HasPrefix(got[0].Text, "# not a heading") {
		t.Fatalf("plain text chunks = %q", got)
	}
}

func TestSplitSoftMaximum(t *testing.T) {
	para := strings.Repeat("The tunnel restarts when the lease expires. ", 40) // ~440 tokens
	doc := "# Long\n\n" + para + "\n\n" + para + "\n\n" + para
	got := Split(doc, true, 800)
	if len(got) < 2 {
		t.Fatalf("a ~1300-token section gave %d chunk(s)", len(got))
	}
	total := 0
	for i, c := range got {
		if n := Tokens(c.Text); n > 800 {
			t.Errorf("chunk %d has %d tokens, over the 800 maximum", i, n)
		}
		if !strings.HasPrefix(c.Text, "# Long\n\n") || c.Heading != "Long" {
			t.Errorf("chunk %d does not carry its heading: %q", i, c.Text[:20])
		}
		total += strings.Count(c.Text, "tunnel")
	}
	if total != 120 {
		t.Errorf("chunks hold %d sentences, want all 120", total)
	}
}

func TestSplitOversizedSentenceAndWord(t *testing.T) {
	sentence := strings.Repeat("word ", 2000) // one sentence of 2000 words
	got := Split(sentence, false, 100)
	words := 0
	for i, c := range got {
		if n := Tokens(c.Text); n > 100 {
			t.Errorf("chunk %d has %d tokens", i, n)
		}
		words += len(strings.Fields(c.Text))
	}
	if words != 2000 {
		t.Fatalf("lost words: %d of 2000", words)
	}
	if got := Split("   \n\n  ", true, 0); len(got) != 0 {
		t.Fatalf("blank document gave %q", got)
	}
}
