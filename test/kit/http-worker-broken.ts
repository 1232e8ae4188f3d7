// An HTTP worker entry whose module fails to load (as a broken installation would).
throw new Error("injected fault: the HTTP worker module does not load");
