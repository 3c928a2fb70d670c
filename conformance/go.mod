module github.com/iii-skills/skills/conformance

go 1.25.0

require github.com/iii-skills/skills/sdk-go v0.0.0

replace github.com/iii-skills/skills/sdk-go => ../sdk-go
