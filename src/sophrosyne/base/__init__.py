"""The ground floor: errors aside, what every layer uses: deadlines, work in the background, text, patterns."""
