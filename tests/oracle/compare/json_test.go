package main

import "testing"

func mustParse(t *testing.T, s string) *value {
	t.Helper()
	v, err := parseJSON(s)
	if err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return v
}

// The comparison must tell apart what encoding/json would merge, and accept what is the same
// value spelled two ways.
func TestDiff(t *testing.T) {
	for _, c := range []struct {
		want, got string
		same      bool
	}{
		{`"\udcff"`, `"\udcfe"`, false},                             // two invalid bytes (both U+FFFD to encoding/json)
		{`"\udcff"`, `"\ufffd"`, false},                             // an invalid byte is not U+FFFD
		{`"a\u0000b"`, `"a\u0000b"`, true},                          //
		{`18446744073709551615`, `18446744073709551614`, false},     // above 2^53
		{`9007199254740993`, `9007199254740992`, false},             //
		{`1e+06`, `1000000`, true},                                  // one double, two spellings
		{`0.1`, `0.10000000000000002`, false},                       //
		{`-0`, `0`, false},                                          // the sign of zero
		{`"\u0000f32:0.1"`, `0.1`, true},                            // a float32 read as a float32
		{`"\u0000f32:-2.9819738e+09"`, `-2981973760`, true},         //
		{`"\u0000f32:0.1"`, `0.10000001`, false},                    // the next float32
		{`{"a":1,"b":{}}`, `{"a":1}`, true},                         // a zero-size field not shown
		{`{"a":1,"b":[{},{}]}`, `{"a":1}`, true},                    //
		{`{"a":1,"b":[]}`, `{"a":1,"b":[]}`, true},                  //
		{`{"a":1,"b":0}`, `{"a":1}`, false},                         // a field with a value missing
		{`{"a":1}`, `{"a":1,"b":0}`, false},                         // a field the program did not have
		{`{"len":2,"items":[1,2]}`, `{"len":2,"items":[1]}`, false}, //
		{`{"type":"int","value":5}`, `{"type":"int","data":"0x5"}`, false},
		{`null`, `{}`, false},
		// A map's pairs are a set: any order, each pair once, every pair there.
		{`{"len":2,"items":[{"key":"a","value":1},{"key":"b","value":2}]}`, `{"len":2,"items":[{"key":"b","value":2},{"key":"a","value":1}]}`, true},
		{`{"len":2,"items":[{"key":"a","value":1},{"key":"b","value":2}]}`, `{"len":2,"items":[{"key":"a","value":1},{"key":"a","value":1}]}`, false},
		{`{"len":2,"items":[{"key":"a","value":1},{"key":"b","value":2}]}`, `{"len":2,"items":[{"key":"a","value":2},{"key":"b","value":1}]}`, false},
		{`{"len":2,"items":[{"key":"a","value":1},{"key":"b","value":2}]}`, `{"len":2,"items":[{"key":"a","value":1}]}`, false},
		{`{"len":2,"items":[{"key":"a","value":1},{"key":"b","value":2}]}`, `{"len":2}`, true}, // its len alone
		{`{"len":2,"items":[{"key":"a","value":1},{"key":"b","value":2}]}`, `{"len":3}`, false},
	} {
		d := diff(mustParse(t, c.want), mustParse(t, c.got), "v")
		if (d == "") != c.same {
			t.Errorf("diff(%s, %s) = %q, want same=%v", c.want, c.got, d, c.same)
		}
	}
}

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"main.(*GT0001[go.shape.int_0,go.shape.[]uint8_1]).M": "main.(*GT0001).M",
		"main.G0003[go.shape.struct {}_0]":                    "main.G0003",
		"main.F0002.func1":                                    "main.F0002.func1",
	} {
		if got := normalize(in); got != want {
			t.Errorf("normalize(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{"main.F0123.func1": "01", "main.(*GT2001).M": "20", "main.T0099.M": "00"} {
		if got := chunkOf(in); got != want {
			t.Errorf("chunkOf(%q) = %q, want %q", in, got, want)
		}
	}
}
