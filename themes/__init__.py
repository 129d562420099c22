"""probetop's own Textual themes (dark, light, high contrast) and their TCSS."""
