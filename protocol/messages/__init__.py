"""Requests and responses exchanged between rafka actors and clients, declared once as frozen dataclasses."""
