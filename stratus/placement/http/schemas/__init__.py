"""JSON schemas for request bodies, one module per URL noun, named by the version they start at."""
