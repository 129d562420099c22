"""The terminal UI and command line. Textual is imported only when a screen is shown."""
