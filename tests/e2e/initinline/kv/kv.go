// Package kv is a small attribute model in the manner of go.opentelemetry.io/otel/attribute: a key's
// Int method builds a key-value pair through two more small constructors, all three inlinable.
package kv

type Key string

type Value struct {
	Kind    int
	Numeric uint64
}

type KeyValue struct {
	Key   Key
	Value Value
}

// Int64Value keeps negative numbers apart, so that a copy inlined where v is not constant keeps
// instructions of its own.
func Int64Value(v int64) Value {
	if v < 0 {
		return Value{Kind: 3, Numeric: uint64(-v)}
	}
	return Value{Kind: 2, Numeric: uint64(v)}
}

func IntValue(v int) Value { return Int64Value(int64(v)) }

func (k Key) Int(v int) KeyValue { return KeyValue{Key: k, Value: IntValue(v)} }
