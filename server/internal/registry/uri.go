package registry

import (
	"fmt"
	"strings"

	"github.com/iii-skills/skills/sdk-go/rules"
)

// Scheme is the prefix every resource URI carries.
const Scheme = "iii://"

// IndexID is the URI remainder that addresses the auto-rendered index, and
// IndexURI the full index URI.
const (
	IndexID  = "skills"
	IndexURI = Scheme + IndexID
)

// TargetKind says what a parsed iii:// URI addresses.
type TargetKind int

const (
	// TargetIndex is iii://skills, the auto-rendered index.
	TargetIndex TargetKind = iota + 1
	// TargetSkill is iii://{id}: a stored skill body.
	TargetSkill
	// TargetSection is iii://fn/{a}/{b}/...: the output of function a::b::...
	TargetSection
)

// String names the kind.
func (k TargetKind) String() string {
	switch k {
	case TargetIndex:
		return "index"
	case TargetSkill:
		return "skill"
	case TargetSection:
		return "section"
	}
	return fmt.Sprintf("TargetKind(%d)", int(k))
}

// Target is the result of ParseURI. ID is set for TargetSkill (and is not
// yet validated: ValidateID runs at read time, as upstream does);
// FunctionID is set for TargetSection.
type Target struct {
	Kind       TargetKind
	ID         string
	FunctionID string
}

// IndexTarget, SkillTarget and SectionTarget build Targets.
func IndexTarget() Target             { return Target{Kind: TargetIndex} }
func SkillTarget(id string) Target    { return Target{Kind: TargetSkill, ID: id} }
func SectionTarget(fid string) Target { return Target{Kind: TargetSection, FunctionID: fid} }

// ParseURI resolves an iii:// URI the v0.2.2 way:
//
//  1. the scheme iii:// is required;
//  2. the remainder must be non-empty;
//  3. exactly "skills" is the index (so iii://skills/ and iii://skills/foo
//     are not);
//  4. no segment may be empty;
//  5. a first segment "fn" makes a section URI: at least one more segment,
//     each passing ValidateIDSegment, joined with "::" into the function id;
//  6. anything else is a skill id, returned unvalidated.
//
// Query strings and fragments get no special treatment.
func ParseURI(uri string) (Target, error) {
	rest, ok := strings.CutPrefix(uri, Scheme)
	if !ok {
		return Target{}, ErrURIScheme(uri)
	}
	if rest == "" {
		return Target{}, fmt.Errorf(FmtURIEmptyID, uri)
	}
	if rest == IndexID {
		return IndexTarget(), nil
	}
	segs := strings.Split(rest, "/")
	for _, s := range segs {
		if s == "" {
			return Target{}, fmt.Errorf(FmtURIEmptySegments, uri)
		}
	}
	if segs[0] != ReservedFirstSegment {
		return SkillTarget(rest), nil
	}
	if len(segs) == 1 {
		return Target{}, fmt.Errorf(FmtURIMissingFnPath, uri)
	}
	for _, s := range segs[1:] {
		if err := ValidateIDSegment(s); err != nil {
			return Target{}, fmt.Errorf(FmtURISectionSegment, rules.RustQuote(s), err.Error())
		}
	}
	return SectionTarget(strings.Join(segs[1:], "::")), nil
}

// SkillURI returns iii://{id}.
func SkillURI(id string) string { return Scheme + id }

// AlwaysHiddenPrefixes is the hard floor of internal namespaces: a function
// id starting with any of these can never back a section URI or a prompt,
// and MCP bridges never list it as a tool (sdk-go/rules).
var AlwaysHiddenPrefixes = rules.AlwaysHiddenPrefixes

// IsHidden reports whether functionID starts with one of the
// AlwaysHiddenPrefixes (a plain prefix test).
func IsHidden(functionID string) bool { return rules.IsHidden(functionID) }

// SplitSkillFile reads the id of a skill URI (iii://<skill>/<path>) as a
// file of a skill: the longest prefix of id that passes ValidateID and that
// isSkill accepts is the skill, the rest the file's path, percent-decoded
// once like a skill:// path (DecodeFilePath: "mcp-builder",
// "reference/evaluation.md"; "notes/with%20space.md" is "notes/with
// space.md"). ok is false when no prefix is such a skill; callers then
// answer exactly as for an ordinary id. err says why the rest names no
// file of that skill ("." or ".." segments, a NUL byte, a name that is
// not UTF-8 or too long); uri is the URI it names.
func SplitSkillFile(id string, isSkill func(skill string) bool) (skill, file string, ok bool, err error) {
	for i := strings.LastIndexByte(id, '/'); i > 0; i = strings.LastIndexByte(id[:i], '/') {
		skill, file = id[:i], id[i+1:]
		if ValidateID(skill) != nil || !isSkill(skill) {
			continue
		}
		file, err = DecodeFilePath(file, SkillURI(id))
		if err != nil {
			return skill, "", false, err
		}
		return skill, file, true, nil
	}
	return "", "", false, nil
}
