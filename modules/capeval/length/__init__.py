"""Caption length: the baseline a caption metric must beat where longer captions are judged better."""
