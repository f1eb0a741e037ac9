// Package usemodel holds the built-in sentence encoder's weights: the
// Universal Sentence Encoder Lite model (Apache-2.0, see LICENSE and
// NOTICE in this directory) in the compact float16 form of package embed,
// embedded in the binary so that memgate has semantic recall with no
// download, no network and no API key.
//
// use-lite.bin is generated, never edited: `go generate
// ./internal/embed/usemodel` converts the TensorFlow.js shards of
// ../shared/models/use-lite (relative to the repository root) and writes
// the file and its checksum, use-lite.bin.sha256, which embed verifies
// before loading. See docs/embeddings.md.
package usemodel

import _ "embed"

//go:generate go run ./gen -src ../../../../shared/models/use-lite -out .

// Data is the compact model (embed.LoadUSELiteCompact reads it).
//
//go:embed use-lite.bin
var Data []byte

// SHA256 is the content of use-lite.bin.sha256: the hex SHA-256 of Data,
// a space and the file name.
//
//go:embed use-lite.bin.sha256
var SHA256 string
