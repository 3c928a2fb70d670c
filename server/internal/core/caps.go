package core

import (
	"fmt"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
)

// PublishedConfig is config.yaml's published: block: caps on the skills
// published over iii (skills::register), so that no client fills the
// registry's state and memory. A register that would pass one is refused
// with LIMIT_EXCEEDED naming the cap and the setting; a re-register of an
// id counts its new size instead of the old one. Folder skills and
// bundles are not counted (the operator's, and capped by their own
// rules).
type PublishedConfig struct {
	// MaxSkills caps how many skills are published (0: the default).
	MaxSkills int `yaml:"max_skills"`
	// MaxSkillBytes caps one skill's body, at most the upstream limit of
	// 262144 bytes (0: that limit).
	MaxSkillBytes int `yaml:"max_skill_bytes"`
	// MaxTotalBytes caps the bodies of every published skill together
	// (0: the default).
	MaxTotalBytes int64 `yaml:"max_total_bytes"`
}

// Defaults of PublishedConfig.
const (
	DefaultMaxSkills     = 100000
	DefaultMaxTotalBytes = 128 << 20
)

func (c PublishedConfig) check() error {
	switch {
	case c.MaxSkills < 0:
		return fmt.Errorf("published.max_skills must be 0 (the default, %d) or a positive count, got %d", DefaultMaxSkills, c.MaxSkills)
	case c.MaxSkillBytes < 0 || c.MaxSkillBytes > rules.MaxSkillBytes:
		return fmt.Errorf("published.max_skill_bytes must be from 1 to %d (the body limit of %s; 0: that limit), got %d", rules.MaxSkillBytes, rules.FnSkillsRegister, c.MaxSkillBytes)
	case c.MaxTotalBytes < 0:
		return fmt.Errorf("published.max_total_bytes must be 0 (the default, %d) or a positive size, got %d", int64(DefaultMaxTotalBytes), c.MaxTotalBytes)
	}
	return nil
}

// limits are the caps in force.
func (c PublishedConfig) limits() (skills, skillBytes int, total int64) {
	skills, skillBytes, total = c.MaxSkills, c.MaxSkillBytes, c.MaxTotalBytes
	if skills == 0 {
		skills = DefaultMaxSkills
	}
	if skillBytes == 0 {
		skillBytes = rules.MaxSkillBytes
	}
	if total == 0 {
		total = DefaultMaxTotalBytes
	}
	return skills, skillBytes, total
}

// checkCaps refuses a register of body at id that would pass a cap. Two
// registers in flight at once may each pass a cap the pair exceeds; the
// overshoot is bounded by the registers in flight (the engine's call
// admission).
func (l *Local) checkCaps(id, body string) error {
	maxSkills, maxBytes, maxTotal := l.cfg.Published.limits()
	if len(body) > maxBytes {
		return iii.NewInvocationError(rules.CodeLimitExceeded, fmt.Sprintf(
			"%s: skill %s is %d bytes; published skills are capped at %d bytes each (published.max_skill_bytes)",
			rules.FnSkillsRegister, id, len(body), maxBytes))
	}
	count, total, size := l.skills.Stats(id)
	if size < 0 {
		if count+1 > maxSkills {
			return iii.NewInvocationError(rules.CodeLimitExceeded, fmt.Sprintf(
				"%s: %d skills are published, the most the registry keeps (published.max_skills): unregister one or raise the cap",
				rules.FnSkillsRegister, count))
		}
		size = 0
	}
	if after := total - int64(size) + int64(len(body)); after > maxTotal && len(body) > size {
		return iii.NewInvocationError(rules.CodeLimitExceeded, fmt.Sprintf(
			"%s: skill %s (%d bytes) would bring published skills to %d bytes, over the cap of %d (published.max_total_bytes): unregister some or raise the cap",
			rules.FnSkillsRegister, id, len(body), after, maxTotal))
	}
	return nil
}
