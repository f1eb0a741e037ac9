package embed

import (
	"strings"
	"testing"
)

func TestNewFromConfig(t *testing.T) {
	for _, kind := range []string{"", KindNone} {
		e, err := New(Config{Kind: kind, Path: "ignored"})
		if err != nil || e != nil {
			t.Errorf("kind %q: %v, %v; want a nil Embedder", kind, e, err)
		}
	}

	path := writeFile(t, "tiny.vec.gz", fixture, true)
	e, err := New(Config{Kind: KindLocal, Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := e.(*SIF); !ok || e.Model() != "glove-sif:tiny.vec" || e.Dim() != 4 {
		t.Errorf("local: %T %q %d", e, e.Model(), e.Dim())
	}

	e, err = New(Config{Kind: KindOpenAI, OpenAI: OpenAIConfig{BaseURL: "http://localhost:11434/v1", Model: "nomic-embed-text", Dim: 768}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := e.(*OpenAI); !ok || e.Model() != "openai:nomic-embed-text" || e.Dim() != 768 {
		t.Errorf("openai: %T %q %d", e, e.Model(), e.Dim())
	}

	for _, c := range []struct {
		cfg  Config
		want []string
	}{
		{Config{Kind: "glove"}, []string{`kind "glove"`, "none, local or openai"}},
		{Config{Kind: "OpenAI"}, []string{`kind "OpenAI"`}},
		{Config{Kind: KindLocal}, []string{`"local"`, "Path"}},
		{Config{Kind: KindLocal, Path: path + ".missing"}, []string{path + ".missing"}},
		{Config{Kind: KindOpenAI, OpenAI: OpenAIConfig{Model: "m"}}, []string{"openai", "BaseURL"}},
		{Config{Kind: KindOpenAI, OpenAI: OpenAIConfig{BaseURL: "http://h/v1"}}, []string{"openai", "Model"}},
	} {
		e, err := New(c.cfg)
		if err == nil || e != nil {
			t.Errorf("%+v: %v, %v; want an error", c.cfg, e, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%+v: error %q does not contain %q", c.cfg, err, w)
			}
		}
	}
}
