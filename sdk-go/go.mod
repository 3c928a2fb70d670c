module github.com/iii-skills/skills/sdk-go

go 1.25.0
