"""One module per tool: its result model, how it is built, cut to the budget and shown to an agent or a person."""
