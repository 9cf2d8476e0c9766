"""Readers: presets, Hugging Face configs and their families, the Hub. They turn outside text into schemas."""
