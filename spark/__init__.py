"""The checker: a pure function of the drill record (runs/<id>/), re-runnable offline."""
