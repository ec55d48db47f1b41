// The envelope's values are HaulJSON's: `import HaulRPC` brings them. fuzz/run.sh compiles these
// sources into one module with HaulJSON's, where there is no HaulJSON to import.
#if canImport(HaulJSON)
    @_exported import HaulJSON
#endif
