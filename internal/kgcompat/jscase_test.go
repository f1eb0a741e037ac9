package kgcompat

import (
	"encoding/json"
	"testing"
)

// TestJSLower compares jsLower with JavaScript's toLowerCase: the expected
// values were printed by node (v20) for these inputs.
func TestJSLower(t *testing.T) {
	const fromNode = `[["ΠΈΤΡΟΣ","πέτρος"],["İstanbul","i̇stanbul"],["ΟΔΟΣ Σ","οδος σ"],["ΣΑΣ","σας"],["Σ","σ"],["AΣ.","aς."],["AΣ'B","aσ'b"],["ΑΣ́","ας́"],["ΑΣ́Β","ασ́β"],["Straße","straße"],["ǅ","ǆ"],["ΑΣ-Β","ας-β"],["A.Σ","a.ς"],["KELVIN K","kelvin k"],["İİ","i̇i̇"],["ΌΣΟΣ, ΤΌΣΟΣ","όσος, τόσος"],["ΑΣ1","ας1"]]`
	var cases [][2]string
	if err := json.Unmarshal([]byte(fromNode), &cases); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if got := jsLower(c[0]); got != c[1] {
			t.Errorf("jsLower(%q) = %q, JavaScript gives %q", c[0], got, c[1])
		}
	}
}
