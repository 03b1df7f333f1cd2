// ConvertSupport held the environment ports and the locks together; each now has a module
// named for what it holds. Code that imports ConvertSupport keeps compiling through these.
@_exported import ConvertEnvironment
@_exported import ConvertSynchronization
