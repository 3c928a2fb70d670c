package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// updateOp is one state::update operation, tagged by type:
//
//	{"type":"set","path":"f","value":v}        path "" replaces the whole value
//	{"type":"merge","path"?:p,"value":{…}}     shallow-merges an object
//	{"type":"increment","path":"f","by":n}     missing field counts as 0
//	{"type":"decrement","path":"f","by":n}
//	{"type":"append","path"?:p,"value":v}      appends to an array (missing = [])
//	{"type":"remove","path":"f"}
//
// A path is a top-level field name, or an array of names for a nested
// field; absent, null or "" is the value itself.
type updateOp struct {
	Type  string          `json:"type"`
	Path  json.RawMessage `json:"path"`
	Value json.RawMessage `json:"value"`
	By    json.RawMessage `json:"by"`
}

// opError reports one operation that could not be applied; the others
// still are.
type opError struct {
	OpIndex int    `json:"op_index"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Operation error codes.
const (
	codeInvalidOp    = "INVALID_OP"
	codeInvalidPath  = "INVALID_PATH"
	codeTypeMismatch = "TYPE_MISMATCH"
)

// applyOps applies ops to old (nil = absent) and returns the new value, or
// nil when nothing is to be written (the key is absent and stays absent).
func applyOps(old json.RawMessage, ops []updateOp) (json.RawMessage, []opError, error) {
	var root any
	if old != nil {
		d := json.NewDecoder(bytes.NewReader(old))
		d.UseNumber()
		if err := d.Decode(&root); err != nil {
			return nil, nil, fmt.Errorf("stored value is not valid JSON: %w", err)
		}
	}
	var errs []opError
	fail := func(i int, code, format string, v ...any) {
		errs = append(errs, opError{OpIndex: i, Code: code, Message: fmt.Sprintf(format, v...)})
	}
	for i, op := range ops {
		segs, err := pathSegments(op.Path)
		if err != nil {
			fail(i, codeInvalidPath, "op %d (%s): %v", i, op.Type, err)
			continue
		}
		switch op.Type {
		case "set":
			v, err := decodeValue(op.Value)
			if err != nil {
				fail(i, codeInvalidOp, "op %d (set): %v", i, err)
				continue
			}
			if root, err = setAt(root, segs, v); err != nil {
				fail(i, codeTypeMismatch, "op %d (set): %v", i, err)
			}
		case "merge":
			v, err := decodeValue(op.Value)
			obj, isObj := v.(map[string]any)
			if err != nil || !isObj {
				fail(i, codeInvalidOp, "op %d (merge): `value` must be an object", i)
				continue
			}
			cur, err := getAt(root, segs)
			if err != nil {
				fail(i, codeTypeMismatch, "op %d (merge): %v", i, err)
				continue
			}
			target, ok := cur.(map[string]any)
			if cur == nil {
				target, ok = map[string]any{}, true
			}
			if !ok {
				fail(i, codeTypeMismatch, "op %d (merge): target %s is not an object", i, describePath(segs))
				continue
			}
			for k, v := range obj {
				target[k] = v
			}
			if root, err = setAt(root, segs, target); err != nil {
				fail(i, codeTypeMismatch, "op %d (merge): %v", i, err)
			}
		case "increment", "decrement":
			if len(segs) == 0 && root != nil {
				if _, isNum := root.(json.Number); !isNum {
					fail(i, codeTypeMismatch, "op %d (%s): the value is not a number", i, op.Type)
					continue
				}
			}
			var by json.Number
			if err := json.Unmarshal(op.By, &by); err != nil || by == "" {
				fail(i, codeInvalidOp, "op %d (%s): `by` must be a number", i, op.Type)
				continue
			}
			cur, err := getAt(root, segs)
			if err != nil {
				fail(i, codeTypeMismatch, "op %d (%s): %v", i, op.Type, err)
				continue
			}
			n, isNum := cur.(json.Number)
			if cur == nil {
				n, isNum = "0", true
			}
			if !isNum {
				fail(i, codeTypeMismatch, "op %d (%s): %s is not a number", i, op.Type, describePath(segs))
				continue
			}
			sum := addNumbers(n, by, op.Type == "decrement")
			if root, err = setAt(root, segs, sum); err != nil {
				fail(i, codeTypeMismatch, "op %d (%s): %v", i, op.Type, err)
			}
		case "append":
			v, err := decodeValue(op.Value)
			if err != nil {
				fail(i, codeInvalidOp, "op %d (append): %v", i, err)
				continue
			}
			cur, err := getAt(root, segs)
			if err != nil {
				fail(i, codeTypeMismatch, "op %d (append): %v", i, err)
				continue
			}
			arr, ok := cur.([]any)
			if cur == nil {
				arr, ok = []any{}, true
			}
			if !ok {
				fail(i, codeTypeMismatch, "op %d (append): target %s is not an array", i, describePath(segs))
				continue
			}
			if root, err = setAt(root, segs, append(arr, v)); err != nil {
				fail(i, codeTypeMismatch, "op %d (append): %v", i, err)
			}
		case "remove":
			if root, err = removeAt(root, segs); err != nil {
				fail(i, codeTypeMismatch, "op %d (remove): %v", i, err)
			}
		default:
			fail(i, codeInvalidOp, "op %d: unknown type %q (expected set, merge, increment, decrement, append or remove)", i, op.Type)
		}
	}
	if root == nil && old == nil {
		return nil, errs, nil
	}
	out, err := json.Marshal(root)
	if err != nil {
		return nil, errs, err
	}
	return out, errs, nil
}

func decodeValue(raw json.RawMessage) (any, error) {
	if len(raw) == 0 {
		return nil, fmt.Errorf("missing `value`")
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

func pathSegments(raw json.RawMessage) ([]string, error) {
	r := bytes.TrimSpace(raw)
	if len(r) == 0 || bytes.Equal(r, jsonNull) {
		return nil, nil
	}
	if r[0] == '"' {
		var s string
		if err := json.Unmarshal(r, &s); err != nil {
			return nil, err
		}
		if s == "" {
			return nil, nil
		}
		return []string{s}, nil
	}
	var segs []string
	if err := json.Unmarshal(r, &segs); err != nil {
		return nil, fmt.Errorf("`path` must be a string or an array of strings")
	}
	return segs, nil
}

func describePath(segs []string) string {
	if len(segs) == 0 {
		return "the value"
	}
	b, _ := json.Marshal(segs)
	return "path " + string(b)
}

func getAt(root any, segs []string) (any, error) {
	cur := root
	for i, s := range segs {
		if cur == nil {
			return nil, nil
		}
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s is not an object", describePath(segs[:i]))
		}
		cur = m[s]
	}
	return cur, nil
}

func setAt(root any, segs []string, v any) (any, error) {
	if len(segs) == 0 {
		return v, nil
	}
	m, ok := root.(map[string]any)
	if root == nil {
		m, ok = map[string]any{}, true
	}
	if !ok {
		return root, fmt.Errorf("cannot set a field: the parent is not an object")
	}
	child, err := setAt(m[segs[0]], segs[1:], v)
	if err != nil {
		return root, err
	}
	m[segs[0]] = child
	return m, nil
}

func removeAt(root any, segs []string) (any, error) {
	if len(segs) == 0 {
		return nil, nil
	}
	m, ok := root.(map[string]any)
	if root == nil {
		return nil, nil
	}
	if !ok {
		return root, fmt.Errorf("cannot remove a field: the parent is not an object")
	}
	if len(segs) == 1 {
		delete(m, segs[0])
		return m, nil
	}
	child, ok := m[segs[0]]
	if !ok {
		return m, nil
	}
	nc, err := removeAt(child, segs[1:])
	if err != nil {
		return root, err
	}
	m[segs[0]] = nc
	return m, nil
}

// addNumbers adds (or subtracts) by to n, in integers when both are.
func addNumbers(n, by json.Number, subtract bool) json.Number {
	a, errA := n.Int64()
	b, errB := by.Int64()
	if errA == nil && errB == nil {
		if subtract {
			b = -b
		}
		return json.Number(strconv.FormatInt(a+b, 10))
	}
	fa, _ := n.Float64()
	fb, _ := by.Float64()
	if subtract {
		fb = -fb
	}
	return json.Number(strconv.FormatFloat(fa+fb, 'g', -1, 64))
}
